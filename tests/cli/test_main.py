"""The error model: one exit code per outcome, one clear stderr line, no traceback."""

from __future__ import annotations

import pytest

from kgtool import __version__
from kgtool.cli import main as cli_main
from kgtool.errors import ExitCode, FindingsReported, InputError


def test_version(run):
    result = run(["--version"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"kgtool {__version__}"


def test_help_lists_commands(run):
    result = run(["--help"])
    assert result.exit_code == 0, result.output
    assert "coordinator-of" in result.stdout


def test_no_arguments_shows_help(run):
    result = run([])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage: kgtool") and result.stderr == ""


def test_exit_0_ok(run):
    assert run(["coordinator-of", "g"]).exit_code == ExitCode.OK


def test_exit_2_usage_error_is_one_line(run):
    result = run(["coordinator-of", "--no-such-option"])
    assert result.exit_code == ExitCode.USAGE
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    # kgtool's framing (the command, the culprit, where to look); the sentence between is click's.
    assert lines[0].startswith("kgtool coordinator-of: ") and "--no-such-option" in lines[0]
    assert lines[0].endswith("(see 'kgtool coordinator-of --help')") and "Traceback" not in result.output


def test_unknown_command_is_exit_2(run):
    result = run(["no-such-command"])
    assert result.exit_code == ExitCode.USAGE
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.fixture
def failing_command(monkeypatch):
    """Temporarily make coordinator-of's domain call raise the given exception."""

    def install(exc):
        def boom(*_a, **_k):
            raise exc

        monkeypatch.setattr("kgtool.cli.coordinator_of.locate", boom)

    return install


def test_exit_1_findings(run, failing_command):
    failing_command(FindingsReported("3 stale commits reported"))
    result = run(["coordinator-of", "g"])
    assert result.exit_code == ExitCode.FINDINGS
    assert result.stderr.strip() == "kgtool: 3 stale commits reported"


def test_exit_2_input_error(run, failing_command):
    failing_command(InputError("x.log: byte 12: bad"))
    result = run(["coordinator-of", "g"])
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.strip() == "kgtool: x.log: byte 12: bad"


def test_exit_3_internal_error_without_traceback(run, failing_command):
    failing_command(ZeroDivisionError("oops"))
    result = run(["coordinator-of", "g"])
    assert result.exit_code == ExitCode.INTERNAL
    assert "internal error: ZeroDivisionError: oops" in result.stderr
    assert "Traceback" not in result.output


def test_internal_error_with_a_multiline_message_is_one_line(run, failing_command):
    failing_command(RuntimeError("An error occurred while calling o45.collectToPython.\n: java.lang.X\n\tat y"))
    result = run(["coordinator-of", "g"])
    assert result.exit_code == ExitCode.INTERNAL
    assert result.stderr.count("\n") == 1, result.stderr
    assert "RuntimeError: An error occurred while calling o45.collectToPython." in result.stderr


def test_exit_4_spark_failure(run, failing_command):
    from kgtool.errors import SparkFailure

    failing_command(SparkFailure("spark-audit: Spark's driver JVM ran out of memory: raise spark.driver.memory"))
    result = run(["coordinator-of", "g"])
    assert result.exit_code == ExitCode.SPARK_RESOURCES == 4
    assert result.stderr == "kgtool: spark-audit: Spark's driver JVM ran out of memory: raise spark.driver.memory\n"


def test_debug_shows_traceback(run, failing_command, monkeypatch):
    monkeypatch.delenv(cli_main._DEBUG_ENV, raising=False)
    failing_command(ZeroDivisionError("oops"))
    result = run(["--debug", "coordinator-of", "g"])
    assert result.exit_code == ExitCode.INTERNAL
    assert "Traceback" in result.stderr


def test_real_process_exit_codes_and_stderr(run_process):
    ok = run_process(["coordinator-of", "polygenelubricants", "--format", "json"])
    assert ok.returncode == 0, ok.stderr
    assert b'"partition": 0' in ok.stdout
    bad = run_process(["coordinator-of", "--partitions", "x", "g"])
    assert bad.returncode == 2
    assert bad.stderr.decode().count("\n") == 1
    assert b"Traceback" not in bad.stderr


def test_an_error_quoting_a_huge_input_is_one_bounded_line(run, failing_command):
    # Backstop for a message that quotes its input whole (a parser's, a library's).
    failing_command(InputError("d.yaml: bad value " + "x" * 1_000_000 + "\nsecond line\ud800"))
    result = run(["coordinator-of", "g"])
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.count("\n") == 1
    assert len(result.stderr) < cli_main.MAX_ERROR_CHARS + 100
    assert result.stderr.rstrip().endswith("more characters)")
