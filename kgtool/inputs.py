"""Reading user-named inputs (a path or ``-`` for stdin) with errors a user can act on."""

from __future__ import annotations

import os
import sys

from kgtool.errors import InputError

STDIN = "-"
#: Largest described group, topic description or assignment file read (YAML/JSON documents
#: have their own, lower limit: kgtool.documents.MAX_DOCUMENT_BYTES).
MAX_INPUT_BYTES = 256 * 2**20


class InputTooLarge(InputError):
    """An input past the size a command reads (see :func:`read_bytes`)."""


def display_name(path: str) -> str:
    """How an input is named in messages."""
    return "<stdin>" if path == STDIN else path


def input_error(path: str, exc: OSError, expected: str = "a file") -> InputError:
    """The one-line :class:`InputError` for an ``OSError`` met opening ``path``."""
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{path}: is a directory, expected {expected}")
    if isinstance(exc, FileNotFoundError):
        return InputError(f"{path}: no such file")
    if isinstance(exc, PermissionError):
        return InputError(f"{path}: permission denied")
    return InputError(f"{path}: cannot read: {exc.strerror or exc}")


def read_bytes(path: str, *, max_bytes: int | None = None) -> bytes:
    """All bytes of ``path``, or of standard input for ``-``.

    Args:
        max_bytes: refuse a larger input, before reading it all (a file's size is checked
            first; stdin is read up to one byte past the limit).

    Raises:
        InputError: missing, a directory, unreadable (the OS reason is quoted); larger than
            ``max_bytes``.
    """
    limit = -1 if max_bytes is None else max_bytes + 1
    if path == STDIN:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # pragma: no cover - a text-only stdin replacement
            data = sys.stdin.read(limit).encode("utf-8", "surrogateescape")
        else:
            data = stream.read(limit)
    else:
        try:
            with open(path, "rb") as fh:
                if max_bytes is not None and _size(fh) > max_bytes:
                    raise _too_large(path, max_bytes)
                data = fh.read(limit)
        except OSError as exc:
            raise input_error(path, exc) from None
    if max_bytes is not None and len(data) > max_bytes:
        raise _too_large(path, max_bytes)
    return data


def _size(fh: object) -> int:
    try:
        return os.fstat(fh.fileno()).st_size  # type: ignore[attr-defined]
    except (OSError, AttributeError, ValueError):
        return 0


def _too_large(path: str, max_bytes: int) -> InputError:
    return InputTooLarge(f"{display_name(path)}: larger than {max_bytes / 2**20:,.0f} MiB, the most this input may have")


def read_text(path: str, *, max_bytes: int | None = None) -> str:
    """The UTF-8 text of ``path`` (or stdin), with decoding errors named by line.

    Raises:
        InputError: see :func:`read_bytes`; invalid UTF-8 (line and byte).
    """
    data = read_bytes(path, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{display_name(path)}: line {line}: invalid UTF-8 at byte {exc.start}"
        ) from None
