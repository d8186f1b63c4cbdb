"""The ``kgtool`` Typer application and the one place where exceptions become exit codes.

Subcommands live in their own modules and only parse options and render results.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from kgtool import __version__
from kgtool.errors import ExitCode, KgtoolError

_DEBUG_ENV = "KGTOOL_DEBUG"


class KgtoolGroup(TyperGroup):
    """Runs the command and maps every outcome to one stderr line and an exit code.

    Usage errors (bad option values, unknown options) come out as one line and exit 2,
    kgtool errors with their own code, anything else as an internal error (3) whose
    traceback shows only with ``--debug``.
    """

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
        except _click.exceptions.UsageError as exc:
            cmd = exc.ctx.command_path if exc.ctx is not None else "kgtool"
            _error_line(f"{cmd}: {exc.format_message()} (see '{cmd} --help')")
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
                f"kgtool: internal error: {type(exc).__name__}: {exc} "
                "(run with --debug for the traceback, and please report it)"
            )
            code = ExitCode.INTERNAL
        if standalone_mode:
            sys.exit(int(code))
        return code


def _error_line(message: str) -> None:
    """One line on stderr, no Rich markup interpretation."""
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.stderr.flush()


app = typer.Typer(
    cls=KgtoolGroup,
    name="kgtool",
    help=(
        "Offline analysis of Apache Kafka consumer groups: coordinators, assignors, "
        "record batches and __consumer_offsets history, computed exactly as Kafka does."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
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


# Subcommands: one module each; registration order is the order shown by --help.
from kgtool.cli import assign, coordinator_of, decode_batch, spark_audit  # noqa: E402

for _name, _module, _no_args_help in (
    ("coordinator-of", coordinator_of, False),
    ("assign", assign, True),
    ("decode-batch", decode_batch, False),
    ("spark-audit", spark_audit, False),
):
    app.command(_name, help=_module.HELP, no_args_is_help=_no_args_help)(_module.command)


def main() -> None:
    """Console-script entry point."""
    typer.main.get_command(app).main(prog_name="kgtool")
