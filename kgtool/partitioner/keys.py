"""Keys as a producer serializes them, read from arguments and files of lines.

Key formats (``--key-format``), each the bytes of one of Kafka's serializers
(``org.apache.kafka.common.serialization``):

- ``string``: ``StringSerializer``, UTF-8 (the line must be valid UTF-8);
- ``hex``, ``base64``: raw bytes (``ByteArraySerializer``); base64 is RFC 4648's standard alphabet,
  padding optional;
- ``long``: ``LongSerializer``, the 8 bytes big-endian of a ``Long.parseLong`` decimal;
- ``int``: ``IntegerSerializer``, 4 bytes big-endian of an ``Integer.parseInt`` decimal;
- ``uuid``: ``UUIDSerializer``, which writes ``uuid.toString()`` in UTF-8: the 36-character
  lowercase form (``UUID.toString`` always prints lowercase, so an uppercase line hashes as its
  lowercase form), not the 16 raw bytes.

A line is the key text exactly as written; only its terminator (``\\n`` or ``\\r\\n``) is removed.
Empty lines are skipped, as in ``coordinator-of``, except in ``hex`` and ``base64`` where an
empty line *is* the empty key (zero bytes, which those formats spell as nothing). A line equal
to the null marker (``--null-marker``, as ``null.marker`` of ``kafka-console-producer``,
KIP-810) is a null key.

The scanner (:func:`scan_lines_py`) has a compiled twin, ``kgtool.partitioner._speedups``,
used when it was built and ``KGTOOL_PURE_PYTHON`` is not set; both give the same results and
stop at the same bad line. Files are memory-mapped and standard input is spooled to a temporary
file, so that any input is read in bounded memory, in chunks of :data:`CHUNK_KEYS` keys.
"""

from __future__ import annotations

import base64
import enum
import mmap
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kgtool import native
from kgtool.errors import InputError
from kgtool.inputs import STDIN, display_name, input_error
from kgtool.partitioner.rules import HashFamily, hash_key

_speedups: Any = native.load("kgtool.partitioner._speedups")


def speedups() -> Any:
    """The compiled scanner in use (``kgtool.partitioner._speedups``, chosen by
    :func:`kgtool.native.load`), or None: the pure-Python twin."""
    return _speedups


def speedups_enabled() -> bool:
    """Whether the compiled scanner (``kgtool.partitioner._speedups``) is in use."""
    return _speedups is not None


class KeyFormat(str, enum.Enum):
    """``--key-format``: which serializer turned the application's key into bytes."""

    string = "string"
    hex = "hex"
    base64 = "base64"
    long = "long"
    int = "int"
    uuid = "uuid"

    @property
    def code(self) -> int:
        return _FORMAT_CODES[self]

    @property
    def skips_empty_lines(self) -> bool:
        """hex and base64 spell the empty key as an empty line; the others skip it."""
        return self not in (KeyFormat.hex, KeyFormat.base64)


_FORMAT_CODES = {f: i for i, f in enumerate(KeyFormat)}

#: Kinds of a scanned key (codes shared with the C twin).
KIND_KEY, KIND_EMPTY, KIND_NULL = 0, 1, 2

#: Keys per scanner call: bounds the memory of one chunk (a few MB).
CHUNK_KEYS = 1 << 18

#: The longest line (key text) accepted: no broker takes a record that large (message.max.bytes,
#: 1 MiB by default), and an endless line must not be read to its end. Same value in the C twin.
MAX_KEY_BYTES = 64 << 20
#: Error code of a line longer than MAX_KEY_BYTES (the format errors are ``fmt.code + 1``).
_E_TOO_LONG = 7
#: Key texts longer than this are shown cut, with their length (a key is printed, not kept).
MAX_SHOWN_KEY = 1 << 20

_HEX = re.compile(rb"(?:[0-9a-fA-F]{2})*")
_B64 = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?")
_DECIMAL = re.compile(rb"[+-]?[0-9]+")
_UUID = re.compile(rb"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")

_INT_RANGES = {8: (-(2**63), 2**63 - 1), 4: (-(2**31), 2**31 - 1)}


class KeyFormatError(Exception):
    """Internal: why a line is not a key of the format (the caller adds where)."""


def _shown(text: bytes) -> str:
    s = text[:40].decode("utf-8", "replace")
    return repr(s + "..." if len(text) > 40 else s)


def serialize_key(text: bytes, fmt: KeyFormat) -> bytes:
    """The serialized key for the text of one line (or argument) in format ``fmt``.

    Raises:
        KeyFormatError: the text is not valid for the format (the reason, without location).
    """
    if fmt is KeyFormat.string:
        try:
            text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise KeyFormatError(f"invalid UTF-8 at column {exc.start + 1}: {exc.reason}") from None
        return bytes(text)
    if fmt is KeyFormat.hex:
        if not _HEX.fullmatch(text):
            raise KeyFormatError(f"{_shown(text)} is not hex (an even number of digits 0-9, a-f)")
        return bytes.fromhex(text.decode("ascii"))
    if fmt is KeyFormat.base64:
        if not _B64.fullmatch(text):
            raise KeyFormatError(f"{_shown(text)} is not base64 (RFC 4648 standard alphabet, padding optional)")
        return base64.b64decode(text + b"=" * (-len(text) % 4))
    if fmt in (KeyFormat.long, KeyFormat.int):
        width = 8 if fmt is KeyFormat.long else 4
        lo, hi = _INT_RANGES[width]
        java = "Long" if width == 8 else "Integer"
        if not _DECIMAL.fullmatch(text) or not lo <= int(text) <= hi:
            raise KeyFormatError(
                f"{_shown(text)} is not {'a long' if width == 8 else 'an int'} "
                f"({java}Serializer: a decimal integer from {lo} to {hi})"
            )
        return int(text).to_bytes(width, "big", signed=True)
    if not _UUID.fullmatch(text):
        raise KeyFormatError(f"{_shown(text)} is not a UUID (UUIDSerializer: 8-4-4-4-12 hexadecimal digits)")
    return text.lower()


def scan_lines_py(
    buf, pos: int, end: int, fmt: int, skip_empty: bool, null_marker: bytes | None,
    families: bytes, hashes, kinds, spans, max_keys: int,
) -> tuple[int, int, int, int, int]:
    """Pure-Python twin of ``_speedups.scan_lines`` (see the C file's header): serialize and hash
    the keys of the lines of ``buf[pos:end]``. Returns ``(pos, nkeys, nlines, err, err_pos)``."""
    key_format = list(KeyFormat)[fmt]
    fams = [HashFamily(f) for f in families]
    h_out = np.asarray(hashes).reshape(-1)
    k_out = np.asarray(kinds).reshape(-1)
    s_out = None if spans is None else np.asarray(spans).reshape(-1)
    end = min(end, len(buf))
    nkeys = nlines = 0
    while pos < end and nkeys < max_keys:
        window = min(end, pos + MAX_KEY_BYTES + 2)
        nl = buf.find(b"\n", pos, window)
        if nl < 0 and window < end:
            return pos, nkeys, nlines, _E_TOO_LONG, pos
        stop = end if nl < 0 else nl
        nxt = end if nl < 0 else nl + 1
        if nl >= 0 and stop > pos and buf[stop - 1] == 0x0D:
            stop -= 1
        if stop - pos > MAX_KEY_BYTES:
            return pos, nkeys, nlines, _E_TOO_LONG, pos
        text = bytes(buf[pos:stop])
        if not text and skip_empty:
            nlines += 1
            pos = nxt
            continue
        kind = KIND_KEY
        key = b""
        if null_marker is not None and text == null_marker:
            kind = KIND_NULL
        else:
            try:
                key = serialize_key(text, key_format)
            except KeyFormatError:
                return pos, nkeys, nlines, fmt + 1, pos
            if not key:
                kind = KIND_EMPTY
        for f, family in enumerate(fams):
            h_out[f * max_keys + nkeys] = 0 if kind == KIND_NULL else hash_key(family, key)
        k_out[nkeys] = kind
        if s_out is not None:
            s_out[2 * nkeys] = pos
            s_out[2 * nkeys + 1] = stop
        nkeys += 1
        nlines += 1
        pos = nxt
    return pos, nkeys, nlines, 0, 0


def _scan(*args):
    if _speedups is not None:
        return _speedups.scan_lines(*args)
    return scan_lines_py(*args)


# -- inputs ------------------------------------------------------------------------------------

@dataclass
class KeySource:
    """One input of keys: the lines of a file (or stdin), or keys given as arguments."""

    name: str
    data: Any = None  # mmap or bytes holding lines
    literals: list[tuple[int, str]] | None = None  # (argument number, text)
    warnings: list[str] = field(default_factory=list)

    def close(self) -> None:
        if isinstance(self.data, mmap.mmap):
            try:
                self.data.close()
            except BufferError:  # a view is still alive; the GC closes it
                pass


def open_lines(path: str) -> KeySource:
    """A file (or ``-``, standard input) of keys, one per line, mapped rather than read.

    Raises:
        InputError: missing, a directory, unreadable.
    """
    name = display_name(path)
    if path == STDIN:
        stream = getattr(sys.stdin, "buffer", sys.stdin)
        spool = tempfile.TemporaryFile()
        with spool:
            shutil.copyfileobj(stream, spool, 1 << 20)
            spool.flush()
            return KeySource(name, _map(spool.fileno(), name))
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise input_error(path, exc, "a file of keys, one per line") from None
    try:
        if not os.path.isfile(path):
            raise InputError(f"{path}: not a regular file, expected a file of keys, one per line")
        return KeySource(name, _map(fd, name))
    finally:
        os.close(fd)


def _map(fd: int, name: str):
    size = os.fstat(fd).st_size
    if size == 0:
        return b""
    try:
        m = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise InputError(f"{name}: cannot map the file: {exc}") from None
    if hasattr(mmap, "MADV_SEQUENTIAL"):
        try:
            m.madvise(mmap.MADV_SEQUENTIAL)
        except OSError:  # pragma: no cover
            pass
    return m


def literal_keys(args: list[tuple[int, str]]) -> KeySource:
    """Keys given as command-line arguments (each argument one key; '' is the empty key)."""
    return KeySource("arguments", literals=list(args))


# -- scanning ----------------------------------------------------------------------------------

@dataclass
class KeyChunk:
    """Up to :data:`CHUNK_KEYS` keys of one source: their hashes by family and their kinds.

    The arrays are views into buffers reused by the next chunk: copy what must outlive it.
    """

    source: str
    hashes: np.ndarray  # uint32, shape (families, n)
    kinds: np.ndarray  # uint8 (KIND_KEY, KIND_EMPTY, KIND_NULL)
    texts: list[str | None] | None  # the key texts (None for a null key), when asked for

    def __len__(self) -> int:
        return len(self.kinds)


def scan_keys(
    sources: list[KeySource],
    fmt: KeyFormat,
    families: list[HashFamily],
    *,
    null_marker: str | None = None,
    with_texts: bool = False,
    chunk_keys: int = CHUNK_KEYS,
) -> Iterator[KeyChunk]:
    """Serialize and hash every key of ``sources``, chunk by chunk, in input order.

    Raises:
        InputError: a line (or argument) that is not a key of ``fmt``, naming the source and line.
    """
    fam_codes = bytes(int(f) for f in families)
    marker = None if null_marker is None else null_marker.encode("utf-8", "surrogateescape")
    hashes = np.zeros((len(families), chunk_keys), dtype=np.uint32)
    kinds = np.zeros(chunk_keys, dtype=np.uint8)
    spans = np.zeros(2 * chunk_keys, dtype=np.int64) if with_texts else None
    for src in sources:
        if src.literals is not None:
            yield from _literal_chunks(src, fmt, families, null_marker, with_texts, chunk_keys)
            continue
        data = src.data
        n = len(data)
        pos = 0
        line_base = 0
        releaser = _releaser(data)
        while pos < n:
            if releaser is not None:
                releaser.advance(pos)
            nxt, nkeys, nlines, err, err_pos = _scan(
                data, pos, n, fmt.code, fmt.skips_empty_lines, marker, fam_codes, hashes, kinds, spans,
                chunk_keys,
            )
            if err:
                raise _line_error(src, data, err_pos, line_base + nlines + 1, fmt, err)
            texts = None
            if with_texts:
                sp = spans[: 2 * nkeys].tolist()
                texts = [
                    None if k == KIND_NULL else _text(data, sp[2 * i], sp[2 * i + 1])
                    for i, k in enumerate(kinds[:nkeys].tolist())
                ]
            if nkeys:
                yield KeyChunk(src.name, hashes[:, :nkeys], kinds[:nkeys], texts)
            line_base += nlines
            if nxt <= pos:  # pragma: no cover - the scanner always advances
                raise AssertionError("scan_lines did not advance")
            pos = nxt


def _text(data, start: int, stop: int) -> str:
    if stop - start <= MAX_SHOWN_KEY:
        return bytes(data[start:stop]).decode("utf-8")
    head = bytes(data[start : start + MAX_SHOWN_KEY]).decode("utf-8", "ignore")
    return f"{head}... ({stop - start} bytes)"


def _releaser(data):
    """Drops the pages of a large mapped file behind the scan (bounded RSS); None for small
    inputs, which do not pay for importing the codec."""
    if not isinstance(data, mmap.mmap) or len(data) < (64 << 20):
        return None
    from kgtool.codec.segment import PageReleaser

    return PageReleaser(data)


def _line_error(src: KeySource, data, start: int, line: int, fmt: KeyFormat, err: int) -> InputError:
    if err == _E_TOO_LONG:
        return InputError(
            f"{src.name}: line {line}: longer than {MAX_KEY_BYTES >> 20} MiB; no broker accepts a "
            "record with such a key (message.max.bytes)"
        )
    nl = data.find(b"\n", start)
    stop = len(data) if nl < 0 else nl
    if nl >= 0 and stop > start and data[stop - 1] == 0x0D:
        stop -= 1
    text = bytes(data[start:stop])
    try:
        serialize_key(text, fmt)
        reason = f"not a valid {fmt.value} key"  # pragma: no cover - the twins agree
    except KeyFormatError as exc:
        reason = str(exc)
    return InputError(f"{src.name}: line {line}: {reason} (--key-format {fmt.value})")


def _literal_chunks(
    src: KeySource, fmt: KeyFormat, families: list[HashFamily], null_marker: str | None,
    with_texts: bool, chunk_keys: int,
) -> Iterator[KeyChunk]:
    items = src.literals or []
    for lo in range(0, len(items), chunk_keys):
        part = items[lo : lo + chunk_keys]
        hashes = np.zeros((len(families), len(part)), dtype=np.uint32)
        kinds = np.zeros(len(part), dtype=np.uint8)
        texts: list[str | None] = []
        for i, (number, text) in enumerate(part):
            if null_marker is not None and text == null_marker:
                kinds[i] = KIND_NULL
                texts.append(None)
                continue
            try:
                raw = text.encode("utf-8")
            except UnicodeEncodeError:
                # Undecodable argv bytes arrive as lone surrogates (surrogateescape).
                raise InputError(f"argument {number}: not valid UTF-8 (--key-format {fmt.value})") from None
            try:
                key = serialize_key(raw, fmt)
            except KeyFormatError as exc:
                raise InputError(f"argument {number}: {exc} (--key-format {fmt.value})") from None
            kinds[i] = KIND_EMPTY if not key else KIND_KEY
            for f, family in enumerate(families):
                hashes[f, i] = hash_key(family, key)
            texts.append(text)
        yield KeyChunk(src.name, hashes, kinds, texts if with_texts else None)


def bom_warning(src: KeySource, fmt: KeyFormat) -> str | None:
    """A warning when a file of string keys starts with a byte-order mark (kept in the key)."""
    if fmt is KeyFormat.string and src.data is not None and bytes(src.data[:3]) == b"\xef\xbb\xbf":
        return (
            f"{src.name}: line 1 starts with U+FEFF (a byte-order mark); it is kept as part of "
            "the first key, as a producer reading this file would send it"
        )
    return None
