"""Files a command writes next to its summary (``--reset-plan FILE``, ``--report FILE``): checked
before the work starts, written atomically once it has succeeded.

The check creates and removes a temporary file next to the path, as the write will, so that a
path that cannot be written is a usage error (exit 2) before Spark starts rather than a failure
after a long audit. The write goes to a temporary file in the same directory, flushed to disk,
then renamed over the path (``os.replace``, atomic on POSIX): a reader sees the old file or the
new one, never half of one, and a failed write leaves the old file as it was.
"""

from __future__ import annotations

import os
import uuid

from kgtool.errors import InputError, UsageError


def check_writable(path: str, option: str) -> None:
    """``path`` can be written by :func:`write_atomic`.

    Args:
        path: the file to be written (a local path).
        option: the option naming it, for the message (``--report``).

    Raises:
        UsageError: the path is empty or a directory, its directory is missing, it is read-only,
            or nothing can be created in its directory.
    """
    if not path:
        raise UsageError(f"{option}: empty path")
    if os.path.isdir(path):
        raise UsageError(f"{option}: {path} is a directory")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"{option}: cannot write {path}: directory {directory} does not exist")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UsageError(f"{option}: cannot write {path}: it exists and is read-only")
    try:
        fd, tmp = _create_temporary(path)
    except OSError as exc:
        raise UsageError(f"{option}: cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(tmp)


def _create_temporary(path: str) -> tuple[int, str]:
    """A new file next to ``path`` (same filesystem: renamed over it), mode 0666 less the umask."""
    directory, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp


def write_atomic(path: str, data: bytes, option: str) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file next to it, flushed to disk, then
    renamed over it; on any failure ``path`` is left as it was and no temporary file remains.

    Raises:
        InputError: the file cannot be written (``option`` names it in the message).
    """
    try:
        fd, tmp = _create_temporary(path)
    except OSError as exc:
        raise InputError(f"{option}: cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"{option}: cannot write {path}: {exc.strerror or exc}") from None
    try:  # the rename itself, on disk (best effort: not every filesystem opens directories)
        dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
