"""Reading user-named inputs (a path or ``-`` for stdin) with errors a user can act on."""

from __future__ import annotations

import os
import sys

from kgtool.errors import InputError

STDIN = "-"


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


def read_bytes(path: str) -> bytes:
    """All bytes of ``path``, or of standard input for ``-``.

    Raises:
        InputError: missing, a directory, unreadable (the OS reason is quoted).
    """
    if path == STDIN:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # pragma: no cover - a text-only stdin replacement
            return sys.stdin.read().encode("utf-8", "surrogateescape")
        return stream.read()
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise input_error(path, exc) from None


def read_text(path: str) -> str:
    """The UTF-8 text of ``path`` (or stdin), with decoding errors named by line."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{display_name(path)}: line {line}: invalid UTF-8 at byte {exc.start}"
        ) from None


def check_readable_file(path: str) -> None:
    """Fail early, with a clear message, for a path that cannot be opened."""
    if path == STDIN:
        return
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or directory")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path}: permission denied")
