"""The ``kgtool`` Typer application and the one place where exceptions become exit codes.

Subcommands live in their own modules and only parse options and render results.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from kgtool import __version__
from kgtool.cli import params
from kgtool.errors import ExitCode, KgtoolError

_DEBUG_ENV = "KGTOOL_DEBUG"


class KgtoolGroup(TyperGroup):
    """The root command.

    Subcommands are loaded lazily (:data:`SUBCOMMANDS`). :meth:`main` runs the command and maps
    every outcome to one stderr line and an exit code: usage errors (bad option values, unknown
    options) exit 2, kgtool errors with their own code, anything else is an internal error (3)
    whose traceback shows only with ``--debug``.
    """

    context_class = params.Context

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        params.tidy(self)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in SUBCOMMANDS:
            self.commands[cmd_name] = load_subcommand(cmd_name)
        return self.commands.get(cmd_name)

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        from typer import _click
        from typer.exceptions import Abort

        argv = list(sys.argv[1:] if args is None else args)
        debug = "--debug" in argv or os.environ.get(_DEBUG_ENV) == "1"
        code: int = ExitCode.OK
        try:
            rv = super().main(
                args=argv, prog_name=prog_name or "kgtool", complete_var=complete_var,
                standalone_mode=False, **extra,
            )
            if isinstance(rv, int) and not isinstance(rv, bool):
                code = rv
        except _click.exceptions.NoArgsIsHelpError as exc:
            # A bare `kgtool`: the help is the answer (Rich help prints itself and leaves the
            # message empty; the plain help is the message).
            if exc.format_message().strip():
                sys.stdout.write(exc.format_message().rstrip("\n") + "\n")
            code = ExitCode.OK
        except _click.exceptions.UsageError as exc:
            _error_line(_usage_message(exc))
            code = ExitCode.USAGE
        except _click.exceptions.ClickException as exc:
            _error_line(f"kgtool: {exc.format_message()}")
            code = ExitCode.USAGE
        except KgtoolError as exc:
            if debug:
                traceback.print_exc()
            if str(exc):
                _error_line(f"kgtool: {exc}")
            code = exc.exit_code
        except (Abort, KeyboardInterrupt):
            _error_line("kgtool: interrupted")
            code = 130
        except BrokenPipeError:
            # Output piped into `head` and closed: not an error of ours.
            try:
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115
            except OSError:
                pass
            code = ExitCode.OK
        except Exception as exc:  # noqa: BLE001 - the one place that catches everything
            if debug:
                traceback.print_exc()
            _error_line(
                f"kgtool: internal error: {type(exc).__name__}: {_first_line(exc)} "
                "(run with --debug for the traceback, and please report it)"
            )
            code = ExitCode.INTERNAL
        if standalone_mode:
            sys.exit(int(code))
        return code


def _usage_message(exc: Any) -> str:
    """One line for a command-line error, in kgtool's words: ``kgtool assign: missing
    GROUP_FILE (see 'kgtool assign --help')``, ``kgtool decode-batch: --format: 'xml' is not one
    of table, json, jsonl``."""
    from typer import _click

    cmd = exc.ctx.command_path if exc.ctx is not None else "kgtool"
    param = getattr(exc, "param", None)
    if isinstance(exc, _click.exceptions.MissingParameter) and param is not None:
        what = params.option_name(param)
        kind = "option" if param.param_type_name == "option" else "argument"
        return f"{cmd}: missing {kind} {what} (see '{cmd} --help')"
    if isinstance(exc, _click.exceptions.BadParameter) and param is not None:
        return f"{cmd}: {params.option_name(param)}: {exc.message}"
    return f"{cmd}: {exc.format_message()} (see '{cmd} --help')"


def _first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message: errors are one line on stderr (a
    multi-line message, e.g. with a Java stack trace, is for --debug)."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a __str__ that fails (py4j asks the JVM)
        text = ""
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


#: Longest error line written: messages quote their input cut short already; this is the
#: backstop for one that does not (a parser quoting a megabyte line).
MAX_ERROR_CHARS = 2000


def _error_line(message: str) -> None:
    """One line on stderr, no Rich markup interpretation: line breaks folded, cut to
    :data:`MAX_ERROR_CHARS`, unencodable characters escaped."""
    text = " ".join(part.strip() for part in message.strip().splitlines() if part.strip())
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + f"... ({len(text) - MAX_ERROR_CHARS:,} more characters)"
    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    text = text.encode(encoding, "backslashreplace").decode(encoding, "replace")
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


_CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": params.HELP_WIDTH}

app = typer.Typer(
    cls=KgtoolGroup,
    name="kgtool",
    help=(
        "Offline analysis of Apache Kafka consumer groups: coordinators, assignors, "
        "record batches and __consumer_offsets history, computed exactly as Kafka does."
    ),
    no_args_is_help=True,
    # --install-completion / --show-completion; values complete from each parameter's choices
    # or autocompletion callback (kgtool.cli.params).
    add_completion=True,
    # Click's plain help: wrapped, never cut short, no box drawing, the same at any width.
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings=_CONTEXT_SETTINGS,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"kgtool {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(
        False, "--debug", help="Show the Python traceback of errors (for bug reports)."
    ),
) -> None:
    """Offline analysis of Apache Kafka consumer groups."""
    # --debug is read from the argument list by KgtoolGroup.main (it must work even when
    # parsing fails before this callback runs); declared here for --help and validation.


# Subcommands: one module each, imported only when that command runs (or for help), so that
# `kgtool decode-batch` never pays for NumPy, the assignors or PySpark's Python side.
# Order here is the order --help shows.
SUBCOMMANDS: dict[str, tuple[str, bool]] = {
    # name: (module, no_args_is_help)
    "coordinator-of": ("kgtool.cli.coordinator_of", False),
    "partition-of": ("kgtool.cli.partition_of", False),
    "assign": ("kgtool.cli.assign", False),
    "decode-batch": ("kgtool.cli.decode_batch", False),
    "spark-audit": ("kgtool.cli.spark_audit", False),
}


class KgtoolCommand(TyperCommand):
    """A subcommand, its parameters given kgtool's help, messages and completion."""

    context_class = params.Context

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        params.tidy(self)


def load_subcommand(name: str) -> Any:
    """Build the click command of one subcommand from its module (``HELP`` + ``command``)."""
    module_name, no_args_is_help = SUBCOMMANDS[name]
    module = importlib.import_module(module_name)
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    single.command(
        name,
        cls=KgtoolCommand,
        help=module.HELP,
        # The whole first sentence in `kgtool --help` (click would cut it at 45 characters).
        short_help=module.HELP.strip().split("\n", 1)[0].rstrip("."),
        no_args_is_help=no_args_is_help,
        context_settings=_CONTEXT_SETTINGS,
    )(module.command)
    cmd = typer.main.get_command(single)
    cmd.name = name
    return cmd


def subcommands() -> dict[str, Any]:
    """Every subcommand's click command, loaded (for man pages and tests)."""
    group = typer.main.get_command(app)
    return {name: group.get_command(None, name) for name in SUBCOMMANDS}  # type: ignore[attr-defined]


def main() -> None:
    """Console-script entry point."""
    typer.main.get_command(app).main(prog_name="kgtool")


def run_subcommand(name: str, args: Sequence[str]) -> int:
    """Run ``kgtool NAME ARGS...`` in this process and return its exit status: for entry points
    other than the console script (``spark-submit kgtool/spark/job.py`` runs ``spark-audit``)."""
    return int(typer.main.get_command(app).main(args=[name, *args], prog_name="kgtool", standalone_mode=False))
