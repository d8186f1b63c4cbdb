"""What a new user meets first: the bare command, --help at any width, kgtool's own wording for
bad option values, and shell completion (Click's ``_KGTOOL_COMPLETE`` protocol, as a shell
calls it)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from kgtool.assignors import registry
from kgtool.cli import params
from kgtool.cli.main import SUBCOMMANDS
from tests.cli.conftest import REPO


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def kgtool(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kgtool", *args], capture_output=True, text=True,
                          env=_env(**env), timeout=timeout)


# --- a bare command ----------------------------------------------------------------------------

def test_bare_kgtool_prints_the_help_and_nothing_else():
    p = kgtool()
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    assert p.stdout.startswith("Usage: kgtool [OPTIONS] COMMAND [ARGS]...")
    for name in SUBCOMMANDS:
        assert f"  {name}  " in p.stdout


def test_subcommand_without_its_input_is_a_one_line_usage_error():
    p = kgtool("assign")
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr == "kgtool assign: missing argument GROUP_FILE (see 'kgtool assign --help')\n"


# spark-audit without a path audits the bundled sample (a Spark run, not an error).
@pytest.mark.parametrize("name", [n for n in SUBCOMMANDS if n != "spark-audit"])
def test_no_command_answers_no_arguments_with_an_empty_error_line(run, name):
    r = run([name])
    assert r.exit_code == 2
    (line,) = r.stderr.splitlines()
    assert line.startswith("kgtool") and ":  " not in line and len(line) > 20, line


# --- --help ------------------------------------------------------------------------------------

USAGE = {
    "coordinator-of": "Usage: kgtool coordinator-of [OPTIONS] [GROUP_ID]...",
    "partition-of": "Usage: kgtool partition-of [OPTIONS] [KEY]...",
    "assign": "Usage: kgtool assign [OPTIONS] GROUP_FILE",
    "decode-batch": "Usage: kgtool decode-batch [OPTIONS] [INPUT]...",
    "spark-audit": "Usage: kgtool spark-audit [OPTIONS] [PATH]...",
}


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
@pytest.mark.parametrize("columns", [60, 80, 100, 200])
def test_help_is_whole_at_every_width(run_process, name, columns):
    p = subprocess.run([sys.executable, "-m", "kgtool", name, "--help"], capture_output=True, text=True,
                       env=_env(COLUMNS=str(columns)), timeout=120)
    assert p.returncode == 0, p.stderr
    text = p.stdout
    assert text.splitlines()[0] == USAGE[name]
    assert "…" not in text, "help text cut short"
    assert not re.search(r"<(bool|str|int|list\[)", text), "library type placeholders in the help"
    assert "[[" not in text and "{" not in text.splitlines()[0]
    # Lines are broken at blanks only: no option name cut after one of its hyphens.
    assert not re.search(r"--[a-z]+(-[a-z]+)*-$", text, re.MULTILINE), text
    width = max(columns, 60)
    assert all(len(line) <= min(width, params.HELP_WIDTH) for line in text.splitlines() if " " in line.strip())


def test_flags_show_no_placeholder_and_values_show_theirs(run):
    text = run(["decode-batch", "--help"]).stdout
    assert re.search(r"^  --summary {2,}Decode everything", text, re.MULTILINE)
    assert re.search(r"^  --format \[table\|json\|jsonl\|text\]", text, re.MULTILINE)
    assert re.search(r"^  --max-bytes BYTES ", text, re.MULTILINE)


# --- kgtool's own messages for bad values ------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    (["decode-batch", "--format", "xml", "x.log"], "kgtool decode-batch: --format: 'xml' is not one of table, json, jsonl, text"),
    (["coordinator-of", "--partitions", "abc", "g"], "kgtool coordinator-of: --partitions: 'abc' is not an integer"),
    (["coordinator-of", "-p", "abc", "g"], "kgtool coordinator-of: --partitions: 'abc' is not an integer"),
    (["decode-batch", "--decode", "yaml", "x.log"],
     "kgtool decode-batch: --decode: 'yaml' is not one of auto, offsets, txn, share-state, utf8, hex, base64, none"),
    (["decode-batch", "--start-position", "-3", "x.log"], "kgtool decode-batch: --start-position: -3 is less than the minimum, 0"),
    (["assign", "g.yaml", "--max-partitions", "0"], "kgtool assign: --max-partitions: 0 is less than the minimum, 1"),
    (["partition-of", "-p", "3", "-P", "java", "-P", "kafka", "k"],
     "kgtool partition-of: --partitioner: 'kafka' is not one of java, librdkafka, sarama, consistent, "
     "consistent_random, murmur2, murmur2_random, fnv1a, fnv1a_random, sarama-reference"),
])
def test_bad_values_get_kgtools_own_one_line_message(run, args, message):
    r = run(args)
    assert r.exit_code == 2
    assert r.stderr == message + "\n"


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_every_format_option_says_the_same(run, name):
    r = run([name, "--format", "XML", "x"])
    assert r.exit_code == 2
    # decode-batch has kafka-dump-log's text layout besides the three every command has
    choices = "table, json, jsonl, text" if name == "decode-batch" else "table, json, jsonl"
    assert r.stderr == f"kgtool {name}: --format: 'XML' is not one of {choices}\n"


def test_a_valid_value_in_another_case_is_accepted(run):
    r = run(["coordinator-of", "--format", "JSON", "g"])
    assert r.exit_code == 0, r.output


def test_explain_keeps_messages_it_cannot_improve():
    from kgtool.cli.main import subcommands

    fmt = next(p for p in subcommands()["decode-batch"].params if p.name == "output_format")
    assert params.explain(fmt, "json") is None  # the value converts: the error was another one
    assert params.explain(fmt, ("table", "xml")) == "'xml' is not one of table, json, jsonl, text"


# --- shell completion --------------------------------------------------------------------------

def complete_bash(line: str) -> list[str]:
    """What `kgtool` answers bash for the command line ``line`` (the cursor at its end)."""
    words = shlex.split(line) + ([""] if line.endswith(" ") else [])
    p = kgtool(COMP_WORDS=" ".join(words), COMP_CWORD=str(len(words) - 1), _KGTOOL_COMPLETE="complete_bash")
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def test_completion_of_assignor_names():
    assert complete_bash("kgtool assign g.yaml --assignor ") == registry.names()
    assert complete_bash("kgtool assign g.yaml -a coop") == ["cooperative-sticky"]
    assert complete_bash("kgtool assign g.yaml --assignor s") == ["sticky", "server-uniform", "server-range"]


def test_completion_of_a_comma_list_of_assignors():
    assert complete_bash("kgtool assign g.yaml --compare range,co") == ["range,cooperative-sticky"]
    offered = complete_bash("kgtool assign g.yaml --compare range,")
    assert "range,range" not in offered and "range,sticky" in offered


def test_completion_of_choices():
    assert complete_bash("kgtool decode-batch --decode ") == ["auto", "offsets", "txn", "share-state", "utf8", "hex", "base64", "none"]
    assert complete_bash("kgtool decode-batch x.log --format j") == ["json", "jsonl"]
    assert complete_bash("kgtool coordinator-of --format ") == ["table", "json", "jsonl"]


def test_completion_of_commands_and_options():
    assert complete_bash("kgtool ") == list(SUBCOMMANDS)
    assert complete_bash("kgtool decode-batch --st") == ["--start-position", "--strict"]


def test_paths_are_left_to_the_shell():
    # Nothing offered: bash (complete -o default) then completes file names, zsh gets _files.
    assert complete_bash("kgtool decode-batch ") == []
    assert complete_bash("kgtool assign ") == []
    p = kgtool(_TYPER_COMPLETE_ARGS="kgtool decode-batch ", _KGTOOL_COMPLETE="complete_zsh")
    assert p.stdout.strip() == "_files"


def test_completer_callback():
    complete = params.completer(lambda: [("range", "r"), ("roundrobin", "rr"), ("sticky", "s")], comma_list=True)
    assert complete("r") == [("range", "r"), ("roundrobin", "rr")]
    assert complete("range,") == [("range,roundrobin", "rr"), ("range,sticky", "s")]
    assert complete("x") == []


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_show_completion_script_completes_in_a_real_bash(tmp_path):
    """The script --show-completion prints, sourced into bash, and bash's own completion call."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "kgtool"
    wrapper.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kgtool \"$@\"\n")
    wrapper.chmod(0o755)
    script = (
        'source <(kgtool --show-completion)\n'
        'COMP_WORDS=(kgtool decode-batch --bytes h); COMP_CWORD=3\n'
        '_kgtool_completion kgtool\n'
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
        'complete -p kgtool\n'
    )
    env = _env(PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["hex", "complete -o default -F _kgtool_completion kgtool"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_install_completion_writes_the_bash_script(tmp_path):
    env = _env(HOME=str(tmp_path))
    p = subprocess.run(["bash", "-c", f"{shlex.quote(sys.executable)} -m kgtool --install-completion"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    script = tmp_path / ".bash_completions" / "kgtool.sh"
    assert "_KGTOOL_COMPLETE=complete_bash" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()
