"""Reading lists of group (or transactional) ids, one per line, exactly as written.

A line is the id byte for byte: leading and trailing spaces are kept, any Unicode and NUL
included; only the terminator (``\\n`` or ``\\r\\n``) is removed. Empty lines are skipped
(the empty id can still be given on the command line). Invalid UTF-8 is an error naming the
line. The ids come back with their UTF-16 layout so that the hash needs no second pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kgtool.errors import InputError

_BOM = "\ufeff"
#: Most bytes of ids read (files and stdin together). An id costs about seven times its bytes
#: (the bytes, a str each, code units, offsets, partitions): 128 MiB of short ids peak at
#: 0.9 GB, and a single 100 MB id still fits.
MAX_ID_BYTES = 128 * 2**20


@dataclass
class IdList:
    """Ids in input order, with their UTF-16 code units for vectorised hashing."""

    ids: list[str]
    units: np.ndarray  # code units of the whole text: uint16, or uint8 for ASCII text
    starts: np.ndarray  # int64 start of each id in ``units``
    lengths: np.ndarray  # int64 length of each id in code units
    warnings: list[str] = field(default_factory=list)


def parse_id_lines(data: bytes, source: str) -> IdList:
    """Split ``data`` into ids, one per line.

    Raises:
        InputError: the data is not valid UTF-8 (the message names line and byte).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{source}: line {line}: invalid UTF-8 at byte {exc.start} "
            f"(column {exc.start - line_start + 1}): {exc.reason}"
        ) from None
    warnings = []
    if text.startswith(_BOM):
        warnings.append(
            f"{source}: line 1 starts with U+FEFF (a byte-order mark); it is kept as part of "
            "the first id, as a broker would see it"
        )
    if "\r" in text:
        # "\r\n" can only be a terminator (a "\n" always ends a line), so folding it to
        # "\n" removes exactly the terminators and keeps every other "\r".
        text = text.replace("\r\n", "\n")
    ids = list(filter(None, text.split("\n")))

    if text.isascii():
        # ASCII: each byte is one UTF-16 code unit, so the bytes themselves are the units (no
        # copy; UTF-16 would take twice the input again).
        units = np.frombuffer(data if len(text) == len(data) else text.encode("ascii"), dtype=np.uint8)
    else:
        units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype="<u2")
    newlines = np.flatnonzero(units == 0x0A)
    starts = np.empty(len(newlines) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    ends = np.empty(len(newlines) + 1, dtype=np.int64)
    ends[:-1] = newlines
    ends[-1] = len(units)
    lengths = ends - starts
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    if len(starts) != len(ids):  # pragma: no cover - guards the two splits staying in step
        raise AssertionError("line split disagreement")
    return IdList(ids=ids, units=units, starts=starts, lengths=lengths, warnings=warnings)


def id_list_from_strings(ids: list[str]) -> IdList:
    """An :class:`IdList` for ids given directly (e.g. as arguments); empty ids are kept."""
    encoded = [i.encode("utf-16-le", "surrogatepass") for i in ids]
    lengths = np.fromiter((len(b) // 2 for b in encoded), dtype=np.int64, count=len(ids))
    starts = np.zeros(len(ids), dtype=np.int64)
    if len(ids) > 1:
        np.cumsum(lengths[:-1], out=starts[1:])
    units = np.frombuffer(b"".join(encoded), dtype="<u2")
    return IdList(ids=list(ids), units=units, starts=starts, lengths=lengths)


def concat(parts: list[IdList]) -> IdList:
    """Join id lists, keeping order."""
    if len(parts) == 1:
        return parts[0]
    ids: list[str] = []
    units, starts, lengths, warnings = [], [], [], []
    offset = 0
    for p in parts:
        ids.extend(p.ids)
        units.append(p.units)
        starts.append(p.starts + offset)
        lengths.append(p.lengths)
        warnings.extend(p.warnings)
        offset += len(p.units)
    return IdList(
        ids=ids,
        units=np.concatenate(units) if units else np.zeros(0, dtype="<u2"),
        starts=np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64),
        lengths=np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64),
        warnings=warnings,
    )
