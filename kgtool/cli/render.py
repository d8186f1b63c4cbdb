"""All output goes through here: Rich tables for people, JSON / JSON Lines for scripts.

Data goes to stdout; diagnostics, warnings and progress to stderr.
"""

from __future__ import annotations

import enum
import json
import sys
from json.encoder import encode_basestring as _encode_basestring
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


class OutputFormat(str, enum.Enum):
    """``--format`` values. Not every command supports every format."""

    table = "table"
    json = "json"
    jsonl = "jsonl"


_stdout: Console | None = None
_stderr: Console | None = None


def out() -> Console:
    """The Rich console on stdout (created lazily so tests can swap streams)."""
    global _stdout
    if _stdout is None or _stdout.file is not sys.stdout:
        _stdout = Console(file=sys.stdout, highlight=False, soft_wrap=False)
    return _stdout


def err() -> Console:
    """The Rich console on stderr."""
    global _stderr
    if _stderr is None or _stderr.file is not sys.stderr:
        _stderr = Console(file=sys.stderr, highlight=False, soft_wrap=True)
    return _stderr


def warn(message: str) -> None:
    """One warning line on stderr."""
    err().print(f"[yellow]warning:[/yellow] {escape(message)}")


def info(message: str) -> None:
    """One informational line on stderr."""
    err().print(escape(message), style="dim")


# --- JSON: the one writer ----------------------------------------------------------------------
# Two framings, written here only: ``--format json`` is one document (an object, or an array with
# one item per line: "[\n  a,\n  b\n]\n"), ``--format jsonl`` one compact object per line. Fast
# paths pass items already encoded (ids quoted by the C encoder below), so that a million rows
# never go through json.dumps(indent=...).

#: JSON string quoting by the json module's C encoder, UTF-8 kept as ``JsonOut`` and
#: ``print_json`` keep it (no ``\\uXXXX`` escapes: every command prints the same text).
json_quote = _encode_basestring
_COMPACT = (",", ":")


class JsonOut:
    """The items of one command on stdout: a JSON array (``fmt`` json) or JSON Lines (jsonl).

    Items are objects (:meth:`item`, :meth:`items`: encoded once here) or text a command's fast
    encoder built (:meth:`text`, :meth:`texts`: one line each for jsonl). :meth:`close` ends the
    array (``[]`` when it had no item)."""

    __slots__ = ("lines", "separators", "count")

    def __init__(self, fmt: OutputFormat) -> None:
        self.lines = fmt is OutputFormat.jsonl
        #: What item text uses between entries: compact for lines, spaced in an array.
        self.separators = _COMPACT if self.lines else (", ", ": ")
        self.count = 0

    def dumps(self, obj: Any) -> str:
        """One item's text (no newline inside)."""
        return json.dumps(obj, ensure_ascii=False, separators=self.separators)

    def item(self, obj: Any) -> None:
        self.text(self.dumps(obj))

    def items(self, objs: Iterable[Any]) -> None:
        dumps = self.dumps
        for obj in objs:
            self.text(dumps(obj))

    def text(self, text: str) -> None:
        """One pre-encoded item."""
        if self.lines:
            sys.stdout.write(text + "\n")
        else:
            sys.stdout.write(("[\n  " if self.count == 0 else ",\n  ") + text)
        self.count += 1

    def texts(self, texts: Sequence[str]) -> None:
        """Many pre-encoded items in one write."""
        if not texts:
            return
        if self.lines:
            sys.stdout.write("\n".join(texts) + "\n")
        else:
            sys.stdout.write(("[\n  " if self.count == 0 else ",\n  ") + ",\n  ".join(texts))
        self.count += len(texts)

    @property
    def framing(self) -> tuple[str, str]:
        """What comes before and after each item (:meth:`raw` takes items framed so)."""
        return ("", "\n") if self.lines else (",\n  ", "")

    def raw(self, data: bytes) -> None:
        """Items a compiled encoder wrote as UTF-8, each framed by :attr:`framing` (the array's
        first item opens it here)."""
        if not data:
            return
        if not self.lines and self.count == 0:
            data = b"[" + data[1:]
        self.count += 1  # at least one: all close() needs to know
        write_bytes(data)

    def close(self) -> None:
        if not self.lines:
            sys.stdout.write("\n]\n" if self.count else "[]\n")


def write_bytes(data: bytes) -> None:
    """UTF-8 bytes on stdout, after whatever text is buffered before them."""
    out = sys.stdout
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is None:  # a text-only stream (some test harnesses)
        out.write(data.decode("utf-8"))
    else:
        buffer.write(data)


def print_json(obj: Any) -> None:
    """Pretty, stable JSON on stdout (keys in insertion order, UTF-8 kept readable)."""
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False))
    sys.stdout.write("\n")


def write_json_lines(objs: Iterable[Any]) -> None:
    """One compact JSON object per line on stdout."""
    JsonOut(OutputFormat.jsonl).items(objs)


class RawJson:
    """A value of :func:`json_document` that is JSON text already (built by a fast encoder,
    indented for its place in the document)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def indented_json(obj: Any, indent: str = "  ") -> str:
    """``obj`` as pretty JSON whose lines after the first are indented by ``indent`` (a value
    nested in a pretty document)."""
    return json.dumps(obj, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def json_array_text(items: Sequence[str], indent: str = "") -> str:
    """Pre-encoded items as a JSON array one item per line, the array nested at ``indent``
    (``[]`` when empty)."""
    if not items:
        return "[]"
    inner = ",\n  " + indent
    return "[\n  " + indent + inner.join(items) + "\n" + indent + "]"


def json_document(fields: Iterable[tuple[str, Any]]) -> str:
    """A pretty JSON object, one field a line, ending in a newline: values are Python data
    (encoded as :func:`print_json` would) or :class:`RawJson`."""
    parts = [
        f"  {json_quote(key)}: {value.text if isinstance(value, RawJson) else indented_json(value)}"
        for key, value in fields
    ]
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write_raw(text: str) -> None:
    """Pre-formatted text on stdout (used by fast paths that build JSON themselves)."""
    sys.stdout.write(text)


#: Longest id or member id shown whole in a table: Rich measures every character of a cell
#: (a 100 MB id took 98 s to lay out), and no person reads past this.
DISPLAY_LIMIT = 200


def display_text(value: str, *, limit: int | None = None, markup: bool = True) -> str:
    """A string as a person should see it in a table: JSON-quoted when it is empty, has
    leading/trailing blanks or unprintable characters, so that nothing hides; Rich markup
    escaped (``markup=False`` for plain text written as is).

    ``limit``: a longer string shows its first ``limit`` characters and its length."""
    shown = value
    suffix = ""
    if limit is not None and len(value) > limit:
        shown = value[:limit]
        suffix = f"... ({len(value):,} characters)"
    if not (shown and shown.isprintable() and value == value.strip()):
        shown = json.dumps(shown, ensure_ascii=False)
    shown += suffix
    return escape(shown) if markup else shown


def table(
    columns: Sequence[str | tuple[str, str]],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    caption: str | None = None,
) -> Table:
    """A Rich table; a column given as ``(name, "right")`` is right-justified."""
    t = Table(title=title, caption=caption, show_lines=False, header_style="bold")
    # Cells too wide for the terminal fold onto the next line: an id cut short with "…" is
    # an id a user cannot copy.
    for col in columns:
        if isinstance(col, tuple):
            t.add_column(col[0], justify=col[1], overflow="fold")  # type: ignore[arg-type]
        else:
            t.add_column(col, overflow="fold")
    for row in rows:
        t.add_row(*(str(c) if not isinstance(c, str) else c for c in row))
    return t


def print_table(*args: Any, **kwargs: Any) -> None:
    out().print(table(*args, **kwargs))


def bar(value: float, maximum: float, width: int = 40) -> str:
    """A horizontal bar of block characters, ``value/maximum`` of ``width`` long."""
    if maximum <= 0 or value <= 0:
        return ""
    eighths = round(value / maximum * width * 8)
    full, part = divmod(eighths, 8)
    return "█" * full + ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")[part]


# --- numbers and times: one style for every command ---------------------------------------------
# Counts and sizes read with thousands separators (7,482; 209,717,781 bytes); identifiers that a
# user copies into another command (offsets, byte positions, partitions, epochs, producer ids)
# are printed as they are. Times are ISO-8601 UTC with milliseconds. Something absent (no
# leader, no timestamp) is MISSING, as kafka-consumer-groups.sh prints it. JSON keeps raw values.

#: An absent value in a table (ConsumerGroupCommand's MISSING_COLUMN_VALUE).
MISSING = "-"


def count(n: int | float | None) -> str:
    """A count or a size for people: ``7,482``; :data:`MISSING` for ``None``."""
    if n is None:
        return MISSING
    if isinstance(n, float) and not n.is_integer():
        return f"{n:,.2f}"
    return f"{int(n):,}"


def iso_ms(ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC: ``2024-06-01T14:03:00.123Z``.

    :data:`MISSING` for ``None`` and -1 (``RecordBatch.NO_TIMESTAMP``); the number itself when
    it is outside the years 1-9999 (a corrupt timestamp stays visible)."""
    import datetime as _dt

    if ms is None or ms == -1:
        return MISSING
    try:
        t = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=ms)
    except (OverflowError, ValueError):
        return str(ms)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def path_tail(path: str, width: int) -> str:
    """``path`` in at most ``width`` characters, shortened from the left at a ``/``
    (``…/__consumer_offsets-7/00000000000000000000.log``): whole names are kept, the last one
    always, even when it alone is wider."""
    if len(path) <= width:
        return path
    parts = path.split("/")
    tail = parts[-1]
    for part in reversed(parts[:-1]):
        longer = f"{part}/{tail}"
        if len(longer) + 2 > width:
            break
        tail = longer
    return "…/" + tail


def bar_unit(peak: float, width: int) -> int:
    """What one block of a bar stands for so that ``peak`` fits in ``width`` blocks: 1, 2 or 5
    times a power of ten (the smallest that fits), so that bars compare across rows and a
    count of 1 is one block, not a full bar."""
    unit = 1
    while peak > unit * width:
        for step in (2, 5, 10):
            if peak <= unit * step * width or step == 10:
                unit *= step
                break
    return unit
