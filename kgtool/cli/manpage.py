"""Man pages generated from the CLI definition, so that they cannot drift from ``--help``.

``python -m kgtool.cli.manpage [DIR]`` writes ``kgtool.1`` and one ``kgtool-<command>.1`` per
subcommand into DIR (default ``man/``). Each page is built from the click command behind the
Typer app: the command's help, its arguments and options (with metavars, defaults and choices),
and the ``MAN_SECTIONS`` mapping (title -> plain text) of the command's module, followed by the
exit codes shared by every command; a module's ``MAN_EXIT_STATUS`` ({code: text}) says what a
code means for that command. EXAMPLES sections are one command per line, verbatim. A test
regenerates the pages and compares them with the committed files, and renders them with man(1).

``pip install`` puts the pages in ``<prefix>/share/man/man1`` (setup.py ``data_files``), where
man(1) finds them from a virtual environment whose ``bin`` is on ``PATH``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any

import typer

from kgtool import __version__
from kgtool.cli import params
from kgtool.errors import ExitCode

EXIT_STATUS = {
    ExitCode.OK: "Success: everything was read and nothing was reported.",
    ExitCode.FINDINGS: "Findings or corruption were reported (CRC failures, skipped batches, stale commits).",
    ExitCode.USAGE: "Usage or input error: a bad option, an unreadable or malformed input file.",
    ExitCode.INTERNAL: "Internal error in kgtool; run with --debug for the traceback and report it.",
    ExitCode.SPARK_RESOURCES: (
        "spark-audit: Spark could not finish the job for lack of resources (out of memory, a lost "
        "executor or Python worker, a task failing past spark.task.maxFailures, the JVM gone); the "
        "message names the setting to change (--conf KEY=VALUE)."
    ),
}


#: Left-aligned, no hyphenation: option names and Kafka names (cooperative-sticky,
#: __consumer_offsets) must not be broken or stretched.
_LAYOUT = (".ad l", ".nh")


def _esc(text: str) -> str:
    """Escape text for roff: backslashes, leading dots/quotes, and hyphens in options."""
    text = text.replace("\\", "\\e")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def _opt(text: str) -> str:
    return _esc(text).replace("-", "\\-")


def _verbatim(text: str) -> str:
    """Lines kept as they are, one per output line (commands in EXAMPLES)."""
    lines = [ln for ln in inspect.cleandoc(text).strip().split("\n")]
    body = "\n".join(".PP" if not ln.strip() else _esc(ln) for ln in lines)
    return f".PP\n.nf\n.RS 4\n{body}\n.RE\n.fi"


def _paragraphs(text: str) -> str:
    """Plain text with blank-line separated paragraphs -> roff; indented lines kept verbatim."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", inspect.cleandoc(text).strip()):
        lines = block.split("\n")
        if all(ln.startswith(("  ", "$ ", "- ")) for ln in lines if ln.strip()):
            if all(ln.startswith("- ") for ln in lines if ln.strip()):
                for ln in lines:
                    out.append(".IP \\(bu 2")
                    out.append(_esc(ln[2:].strip()))
                continue
            out.append(".PP\n.nf\n.RS 4")
            out.extend(_esc(ln) for ln in lines)
            out.append(".RE\n.fi")
        else:
            out.append(".PP")
            out.append(_esc(" ".join(ln.strip() for ln in lines)))
    return "\n".join(out)


def _metavar(param: Any) -> str:
    """The value placeholder: an enum's choices, the declared metavar, else the type name."""
    values = params.choices(param)
    if values is not None:
        return "|".join(values)
    if param.metavar:
        return str(param.metavar)
    return params.type_placeholder(param)


def _param_line(param: Any) -> tuple[str, str]:
    names = ", ".join(f"\\fB{_opt(o)}\\fR" for o in [*param.opts, *param.secondary_opts])
    metavar = ""
    if not getattr(param, "is_flag", False) and param.param_type_name == "option":
        metavar = " \\fI" + _esc(_metavar(param)) + "\\fR"
    helptext = (param.help or "").strip()
    default = param.default
    if param.param_type_name == "option" and not getattr(param, "is_flag", False):
        if default not in (None, (), [], "") and getattr(param, "show_default", True) is not False:
            shown = getattr(default, "value", default)
            helptext += f" Default: {shown}."
    return names + metavar, helptext


def _command_page(name: str, cmd: Any, ctx_name: str) -> str:
    module = sys.modules.get(cmd.callback.__module__) if cmd.callback else None
    sections: dict[str, str] = getattr(module, "MAN_SECTIONS", {}) if module else {}
    title = ctx_name.upper().replace(" ", "-")
    helptext = inspect.cleandoc(cmd.help or "")
    summary = helptext.split("\n", 1)[0].rstrip(".")
    args = [p for p in cmd.params if p.param_type_name == "argument"]
    opts = [p for p in cmd.params if p.param_type_name == "option"]
    synopsis_args = " ".join(_esc(a._usage_display_name()) for a in args)
    if "EXIT STATUS" in {t.upper() for t in sections}:
        raise ValueError(f"{module.__name__}: give MAN_EXIT_STATUS, not an EXIT STATUS section")
    exit_status = {**EXIT_STATUS, **getattr(module, "MAN_EXIT_STATUS", {})}
    lines = [
        f'.TH "{title}" "1" "" "kgtool {__version__}" "kgtool manual"',
        *_LAYOUT,
        ".SH NAME",
        f"{ctx_name.replace(' ', '-')} \\- {_esc(summary)}",
        ".SH SYNOPSIS",
        f".B {ctx_name}",
        f"[\\fIOPTIONS\\fR] {synopsis_args}".rstrip(),
        ".SH DESCRIPTION",
        _paragraphs(helptext),
    ]
    # A module's DESCRIPTION continues the command's (one section of each name on a page).
    sections = dict(sections)
    if "DESCRIPTION" in sections:
        lines.append(_paragraphs(sections.pop("DESCRIPTION")))
    if args:
        lines.append(".SH ARGUMENTS")
        for a in args:
            lines += [".TP", f"\\fI{_esc(params.bare_name(a))}\\fR", _esc(a.help or "")]
    lines.append(".SH OPTIONS")
    for p in opts:
        head, text = _param_line(p)
        lines += [".TP", head, _esc(text)]
    lines += [".TP", "\\fB\\-h\\fR, \\fB\\-\\-help\\fR", "Show the help and exit."]
    for sec_title, body in sections.items():
        render = _verbatim if sec_title.upper() == "EXAMPLES" else _paragraphs
        lines += [f".SH {sec_title.upper()}", render(body)]
    lines.append(".SH EXIT STATUS")
    for code, text in exit_status.items():
        lines += [".TP", f"\\fB{int(code)}\\fR", _esc(text)]
    see = ["kgtool(1)"] if name else []
    lines += [".SH SEE ALSO", ", ".join(see + ["kafka-consumer-groups.sh, kafka-dump-log.sh"])]
    return "\n".join(lines) + "\n"


def _root_page(group: Any, commands: dict[str, Any]) -> str:
    lines = [
        f'.TH "KGTOOL" "1" "" "kgtool {__version__}" "kgtool manual"',
        *_LAYOUT,
        ".SH NAME",
        "kgtool \\- offline analysis of Apache Kafka consumer groups",
        ".SH SYNOPSIS",
        ".B kgtool",
        "[\\fB\\-\\-debug\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        _paragraphs(group.help or ""),
        ".SH COMMANDS",
    ]
    for name, cmd in commands.items():
        summary = inspect.cleandoc(cmd.help or "").split("\n", 1)[0]
        lines += [".TP", f"\\fB{_opt(name)}\\fR", _esc(summary) + f" See kgtool\\-{_opt(name)}(1)."]
    lines.append(".SH OPTIONS")
    for p in group.params:
        head, text = _param_line(p)
        lines += [".TP", head, _esc(text)]
    lines += [".TP", "\\fB\\-h\\fR, \\fB\\-\\-help\\fR", "Show the help and exit."]
    lines.append(".SH EXIT STATUS")
    for code, text in EXIT_STATUS.items():
        lines += [".TP", f"\\fB{int(code)}\\fR", _esc(text)]
    lines += [".SH SEE ALSO", ", ".join(f"kgtool\\-{_opt(n)}(1)" for n in commands)]
    return "\n".join(lines) + "\n"


def generate() -> dict[str, str]:
    """File name -> page text for the root command and every subcommand."""
    from kgtool.cli.main import app, subcommands

    group = typer.main.get_command(app)
    commands = subcommands()
    for cmd in commands.values():
        if cmd.callback is not None:
            importlib.import_module(cmd.callback.__module__)
    pages = {"kgtool.1": _root_page(group, commands)}
    for name, cmd in commands.items():
        pages[f"kgtool-{name}.1"] = _command_page(name, cmd, f"kgtool {name}")
    return pages


def write(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for fname, text in generate().items():
        path = directory / fname
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - a maintenance entry point
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "man"
    for p in write(target):
        print(p)
