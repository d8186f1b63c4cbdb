"""``--reset-plan FILE``: committed offsets as the CSV that ``kafka-consumer-groups.sh
--reset-offsets --from-file FILE`` reads.

The format is kafka-tools' ``GroupOffsetsResetter.parseResetPlan`` (Kafka 4.x; ``CsvUtils``)::

    group,topic,partition,offset        one line per partition (CsvRecordWithGroup), no header

The tool splits the file on ``\\n`` and parses each line as one CSV record (Jackson: RFC 4180
quotes, no trimming, UTF-8), so every line must be a record: a header line would fail as a
record, and a field holding a line break cannot be written at all. It takes the old
``topic,partition,offset`` form only with a single ``--group``; the group column is always
written here, which it reads with any ``--group``/``--all-groups``. Only the offset is restored
(``new OffsetAndMetadata(offset)``: no metadata, no leader epoch), and ``--execute`` clamps it
into the topic partition's current log range.
"""

from __future__ import annotations

import csv
import io
import os
import uuid
from collections.abc import Iterable
from typing import Any

from kgtool.errors import InputError, UsageError

STDOUT = "-"


def plan_text(rows: Iterable[Any]) -> str:
    """The plan of ``rows`` — (group, topic, partition, offset, ...) — sorted by group, topic and
    partition, one ``group,topic,partition,offset`` line each, quoted where CSV needs it.

    Raises:
        InputError: a group or topic holds a line break (the tool reads the file line by line).
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    for group, topic, partition, offset, *_rest in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        for name in (group, topic):
            if "\n" in name or "\r" in name:
                raise InputError(f"--reset-plan: {name!r} holds a line break, which kafka-consumer-groups.sh "
                                 "--from-file cannot read (it splits the file into lines): leave that group out "
                                 "with --group; nothing written")
        w.writerow((group, topic, int(partition), int(offset)))
    return buf.getvalue()


def check_plan_path(path: str) -> None:
    """Before the audit runs: ``path`` can be written (``-``: stdout). The check creates and
    removes a temporary file next to it, as :func:`write_plan` will.

    Raises:
        UsageError: the path is a directory, its directory is missing, or nothing can be
            written there.
    """
    if path == STDOUT:
        return
    if not path:
        raise UsageError("--reset-plan: empty path")
    if os.path.isdir(path):
        raise UsageError(f"--reset-plan: {path} is a directory")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"--reset-plan: cannot write {path}: directory {directory} does not exist")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UsageError(f"--reset-plan: cannot write {path}: it exists and is read-only")
    try:
        fd, tmp = _create_temporary(path)
    except OSError as exc:
        raise UsageError(f"--reset-plan: cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(tmp)


def _create_temporary(path: str) -> tuple[int, str]:
    """A new file next to ``path`` (same filesystem: renamed over it), mode 0666 less the umask."""
    directory, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp


def write_plan(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file next to it, flushed to disk, then
    renamed over it; on any failure ``path`` is left as it was.

    Raises:
        InputError: the file cannot be written.
    """
    try:
        fd, tmp = _create_temporary(path)
    except OSError as exc:
        raise InputError(f"--reset-plan: cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InputError(f"--reset-plan: cannot write {path}: {exc.strerror or exc}") from None
    try:  # the rename itself, on disk (best effort: not every filesystem opens directories)
        dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
