"""How kgtool's parameters read: help lines, usage lines, error messages, shell completion.

Typer builds the click parameters from each command's signature; :func:`tidy` then gives them
kgtool's classes, which change only what a user reads:

- help: no type placeholder on flags (``--strict``, not ``--strict <bool>``), ``TEXT`` /
  ``INTEGER`` / ``[a|b|c]`` where a command declares no metavar, arguments named as the usage
  line names them;
- usage: ``GROUP_FILE``, ``[INPUT]...``, ``PATH...`` (click's notation), whatever brackets the
  metavar was declared with;
- errors: kgtool's own one-line wording for a value that does not convert
  (``'xml' is not one of table, json, jsonl``, ``'abc' is not an integer``) instead of the
  validation library's;
- completion: choices complete by themselves; :func:`completer` builds the callbacks for value
  lists such as assignor names. A parameter naming a file completes nothing here, and the shell
  script Typer installs falls back to the shell's own file-name completion (bash ``complete -o
  default``, zsh ``_files``, fish files).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any

from typer import _click
from typer.core import TyperArgument, TyperOption

#: Placeholders for values of a type the command gave no metavar (click's words).
TYPE_PLACEHOLDERS = {"int": "INTEGER", "str": "TEXT", "float": "FLOAT", "Path": "PATH", "bool": "BOOLEAN"}


def choices(param: Any) -> list[str] | None:
    """The values a parameter accepts, as typed on the command line; ``None`` if any."""
    desc = getattr(param, "type_descriptor", None)
    if desc is None or not desc.is_choice or desc.choices is None:
        return None
    return [str(c.value) if isinstance(c, enum.Enum) else str(c) for c in desc.choices]


def type_placeholder(param: Any) -> str:
    """``INTEGER``, ``TEXT``... for a parameter's annotation (list element type for lists)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    args = getattr(annotation, "__args__", None)
    if args and getattr(annotation, "__origin__", None) is list:
        annotation = args[0]
    name = getattr(annotation, "__name__", None) or "VALUE"
    return TYPE_PLACEHOLDERS.get(name, name.upper())


def bare_name(param: Any) -> str:
    """An argument's name without the brackets and ellipsis its metavar may carry."""
    return (param.metavar or param.name.upper()).strip("[]. ") or param.name.upper()


class KgtoolArgument(TyperArgument):
    """A positional argument: click's usage notation, no type column in the help."""

    @property
    def display_name_raw(self) -> str:
        return bare_name(self)

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        repeated = self.nargs != 1
        if self.required:
            return name + ("..." if repeated else "")
        return f"[{name}]" + ("..." if repeated else "")

    def _rich_display_name(self) -> str:
        return self._usage_display_name()

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def process_value(self, ctx: Any, value: Any) -> Any:
        return _convert(self, super().process_value, ctx, value)


class KgtoolOption(TyperOption):
    """An option: a value placeholder only when it takes a value."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        if self.metavar:
            return self.metavar
        values = choices(self)
        if values is not None:
            return "[" + "|".join(values) + "]"
        return type_placeholder(self)

    def process_value(self, ctx: Any, value: Any) -> Any:
        return _convert(self, super().process_value, ctx, value)


#: Stands in for "-" while click wraps help text: textwrap breaks lines after hyphens, which
#: cuts option names in two (``--batches-`` / ``only``).
_NO_BREAK_HYPHEN = "\u2011"


class HelpFormatter(_click.formatting.HelpFormatter):
    """Click's plain help formatter, with lines broken only at blanks."""

    def write_text(self, text: str) -> None:
        self._unbroken(super().write_text, text)

    def write_dl(self, rows: Any, *args: Any, **kwargs: Any) -> None:
        rows = [(first, second.replace("-", _NO_BREAK_HYPHEN)) for first, second in rows]
        self._unbroken(super().write_dl, rows, *args, **kwargs)

    def _unbroken(self, write: Callable[..., None], text: Any, *args: Any, **kwargs: Any) -> None:
        start = len(self.buffer)
        if isinstance(text, str):
            text = text.replace("-", _NO_BREAK_HYPHEN)
        write(text, *args, **kwargs)
        self.buffer[start:] = [s.replace(_NO_BREAK_HYPHEN, "-") for s in self.buffer[start:]]


class Context(_click.Context):
    formatter_class = HelpFormatter


#: Widest help text: the terminal's width up to this many columns.
HELP_WIDTH = 100


def tidy(command: Any) -> None:
    """Give a click command's Typer parameters kgtool's classes (in place)."""
    for param in command.params:
        if type(param) is TyperArgument:
            param.__class__ = KgtoolArgument
        elif type(param) is TyperOption:
            param.__class__ = KgtoolOption


def option_name(param: Any) -> str:
    """How an error names a parameter: its long option, or an argument's name."""
    if param.param_type_name == "argument":
        return bare_name(param)
    longs = [o for o in param.opts if o.startswith("--")]
    return (longs or param.opts or [param.name])[0]


# --- conversion errors -------------------------------------------------------------------------

def _convert(param: Any, process: Callable[[Any, Any], Any], ctx: Any, value: Any) -> Any:
    try:
        return process(ctx, value)
    except _click.exceptions.MissingParameter:
        raise
    except _click.exceptions.BadParameter as exc:
        message = explain(param, value)
        if message is None:
            raise
        raise _click.exceptions.BadParameter(message, ctx=ctx, param=param) from exc


def explain(param: Any, value: Any) -> str | None:
    """kgtool's message for a command-line value the parameter refuses, or ``None`` when the
    value itself converts (the error came from elsewhere: keep its message)."""
    raw = list(value) if isinstance(value, (list, tuple)) else [value]
    for item in raw:
        if item is None or not isinstance(item, str):
            continue
        message = _explain_one(param, item)
        if message is not None:
            return message
    return None


def _explain_one(param: Any, text: str) -> str | None:
    values = choices(param)
    if values is not None:
        desc = param.type_descriptor
        fold = (lambda s: s) if desc.case_sensitive else str.casefold
        if fold(text) in {fold(v) for v in values}:
            return None
        return f"{text!r} is not one of {', '.join(values)}"
    kind = type_placeholder(param)
    if kind == "INTEGER":
        try:
            number: float = int(text.strip().replace("_", ""), 10)
        except ValueError:
            return f"{text!r} is not an integer"
    elif kind == "FLOAT":
        try:
            number = float(text)
        except ValueError:
            return f"{text!r} is not a number"
    else:
        return None
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None and number < low:
        return f"{text} is less than the minimum, {low:,}"
    if high is not None and number > high:
        return f"{text} is more than the maximum, {high:,}"
    return None


# --- completion --------------------------------------------------------------------------------

def completer(values: Callable[[], Iterable[tuple[str, str]]], *, comma_list: bool = False) -> Callable[[str], list]:
    """A Typer ``autocompletion`` callback offering ``values()`` (value, help) pairs that start
    with what was typed. ``comma_list``: the option takes ``A,B,C``; the last item is completed,
    the ones before it kept and not offered again."""

    def complete(incomplete: str) -> list[tuple[str, str]]:
        head, last = "", incomplete
        done: set[str] = set()
        if comma_list and "," in incomplete:
            before, _, last = incomplete.rpartition(",")
            head = before + ","
            done = set(before.split(","))
        return [(head + v, text) for v, text in values() if v.startswith(last) and v not in done]

    return complete
