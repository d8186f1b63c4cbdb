"""File names and kinds of a partition directory (``LogFileUtils``, ``UnifiedLog``, ``LocalLog``).

``LogFileUtils.filenamePrefixFromOffset`` writes a segment's base offset on 20 digits, zero
padded: ``00000000000000000042.log``, ``.index``, ``.timeindex``, ``.txnindex``; a producer
snapshot is named by its offset the same way (``.snapshot``). Files being deleted, cleaned or
swapped carry a second suffix (``.deleted``, ``.cleaned``, ``.swap``) and are not part of the log.
"""

from __future__ import annotations

import enum
import mmap
import os
import re
from dataclasses import dataclass

from kgtool.codec.model import ScanProblem
from kgtool.errors import InputError
from kgtool.inputs import input_error


class FileKind(str, enum.Enum):
    """What a file of a partition (or broker log) directory holds."""

    segment = "segment"
    offset_index = "offset_index"
    time_index = "time_index"
    txn_index = "txn_index"
    producer_snapshot = "producer_snapshot"
    leader_epoch_checkpoint = "leader_epoch_checkpoint"
    partition_metadata = "partition_metadata"
    offset_checkpoint = "offset_checkpoint"


#: ``LogFileUtils`` suffixes.
_SUFFIXES = {
    ".log": FileKind.segment,
    ".index": FileKind.offset_index,
    ".timeindex": FileKind.time_index,
    ".txnindex": FileKind.txn_index,
    ".snapshot": FileKind.producer_snapshot,
}
#: Fixed names: ``LeaderEpochCheckpointFile.LEADER_EPOCH_CHECKPOINT_FILENAME``,
#: ``PartitionMetadataFile`` ("partition.metadata"), and the broker's ``OffsetCheckpointFile``s
#: (``LogManager``: RecoveryPointCheckpointFile, LogStartOffsetCheckpointFile; ``ReplicaManager``:
#: HighWatermarkFilename; ``LogCleanerManager``: offsetCheckpointFile).
_NAMES = {
    "leader-epoch-checkpoint": FileKind.leader_epoch_checkpoint,
    "partition.metadata": FileKind.partition_metadata,
    "replication-offset-checkpoint": FileKind.offset_checkpoint,
    "recovery-point-offset-checkpoint": FileKind.offset_checkpoint,
    "log-start-offset-checkpoint": FileKind.offset_checkpoint,
    "cleaner-offset-checkpoint": FileKind.offset_checkpoint,
}
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
LOG_START_OFFSET_FILE = "log-start-offset-checkpoint"
LEADER_EPOCH_FILE = "leader-epoch-checkpoint"

_OFFSET_NAME = re.compile(r"^(\d{1,20})\.(log|index|timeindex|txnindex|snapshot)$")
# LocalLog.parseTopicPartitionName (Kafka 4.x): "topic-partition", or
# "topic-partition.uniqueId-delete" / "-future" / "-stray" for logs being deleted, moved or stray.
_SUFFIXED = re.compile(r"^(?P<name>\S+-\S+)\.\S+-(?:delete|future|stray)$")
# Topic.LEGAL_CHARS and Topic.MAX_NAME_LENGTH.
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_PARTITION = re.compile(r"^[0-9]{1,10}$")


def topic_partition_of_dir(name: str) -> tuple[str, int] | None:
    """The (topic, partition) a partition directory's name gives, as the broker reads it
    (``orders-3``, ``orders-3.<uuid>-delete``), or ``None`` when it is no such name."""
    m = _SUFFIXED.match(name)
    base = m["name"] if m else name
    topic, sep, part = base.rpartition("-")
    if not sep or not _TOPIC.match(topic) or not _PARTITION.match(part) or int(part) > 2**31 - 1:
        return None
    return topic, int(part)


def live_partition_of_dir(name: str, topic: str) -> int | None:
    """N when ``name`` is the live directory ``<topic>-N`` of ``topic``; ``None`` for any other
    name, including a ``-delete``/``-future``/``-stray`` copy of it (LocalLog's suffixes)."""
    tp = topic_partition_of_dir(name)
    if tp is None or tp[0] != topic or _SUFFIXED.match(name):
        return None
    return tp[1]


def live_partition_of_path(path: str, topic: str) -> int | None:
    """:func:`live_partition_of_dir` of the directory holding ``path`` (``/`` or ``\\``
    separated, so URLs such as ``hdfs://nn/logs/__consumer_offsets-7/0.log`` too)."""
    parts = [p for p in re.split(r"[\\/]", path) if p]
    return live_partition_of_dir(parts[-2], topic) if len(parts) >= 2 else None


def file_kind(path: str) -> FileKind | None:
    """The kind of a file by its name, or None (``.deleted``/``.cleaned``/``.swap`` and
    anything else)."""
    name = os.path.basename(path)
    kind = _NAMES.get(name)
    if kind is not None:
        return kind
    for suffix, k in _SUFFIXES.items():
        if name.endswith(suffix):
            return k
    return None


def offset_from_name(path: str) -> int | None:
    """The base offset in a segment, index or snapshot file name (``UnifiedLog.offsetFromFile``),
    or None when the name is not ``<digits>.<suffix>``."""
    m = _OFFSET_NAME.match(os.path.basename(path))
    return int(m.group(1)) if m else None


def topic_partition(directory: str) -> tuple[str, int] | None:
    """``(topic, partition)`` from a partition directory's path (:func:`topic_partition_of_dir`
    on its last component), or None."""
    return topic_partition_of_dir(os.path.basename(os.path.normpath(directory)))


@dataclass(frozen=True)
class SegmentFiles:
    """A segment and the files named after its base offset (None: absent)."""

    base_offset: int
    log: str
    index: str | None
    timeindex: str | None
    txnindex: str | None


def log_files(directory: str, *, offset_named: bool = True) -> list[str]:
    """The ``*.log`` files of a partition directory, in name order (for offset-named files, the
    order of their base offsets: ``LogFileUtils`` pads them to 20 digits). ``offset_named``:
    only the files ``UnifiedLog`` loads as segments (``<offset>.log``); False: every ``*.log``,
    as decode-batch reads a directory of hand-named segments. ``.deleted``/``.cleaned``/``.swap``
    files and indexes are never segments.

    Raises:
        InputError: the directory cannot be listed.
    """
    return [os.path.join(directory, n) for n in _log_names(_names(directory), offset_named)]


def _names(directory: str) -> list[str]:
    """The names in a partition directory, sorted.

    Raises:
        InputError: the directory cannot be listed.
    """
    try:
        return sorted(os.listdir(directory))
    except OSError as exc:
        raise input_error(directory, exc, "a partition directory") from None


def _log_names(names: list[str], offset_named: bool) -> list[str]:
    return [n for n in names if n.endswith(".log") and (not offset_named or offset_from_name(n) is not None)]


def segment_inputs(path: str) -> list[str]:
    """The segment files decode-batch reads for ``path``: every ``*.log`` of a directory in name
    order (:func:`log_files`, any name), or the file itself.

    Raises:
        InputError: a directory without ``*.log`` files, or one that cannot be listed.
    """
    if not os.path.isdir(path):
        return [path]
    logs = log_files(path, offset_named=False)
    if not logs:
        raise InputError(f"{path}: no *.log segment files in this directory")
    return logs


def list_segments(directory: str) -> list[SegmentFiles]:
    """The segments of a partition directory, by base offset, with their index files.

    Raises:
        InputError: the directory cannot be listed.
    """
    listed = _names(directory)
    names = set(listed)
    out = []
    for name in _log_names(listed, offset_named=True):
        base = offset_from_name(name)
        stem = name[:-4]

        def beside(suffix: str) -> str | None:
            return os.path.join(directory, stem + suffix) if stem + suffix in names else None

        out.append(SegmentFiles(base, os.path.join(directory, name), beside(".index"), beside(".timeindex"),
                                beside(".txnindex")))
    out.sort(key=lambda s: s.base_offset)
    return out


def segment_of(log_path: str) -> SegmentFiles:
    """One segment file and the index files beside it (base offset 0 when its name has none)."""
    directory = os.path.dirname(log_path) or "."
    base = offset_from_name(log_path)
    if base is None:
        return SegmentFiles(0, log_path, None, None, None)
    stem = os.path.basename(log_path)[:-4]

    def beside(suffix: str) -> str | None:
        p = os.path.join(directory, stem + suffix)
        return p if os.path.isfile(p) else None

    return SegmentFiles(base, log_path, beside(".index"), beside(".timeindex"), beside(".txnindex"))


def list_snapshots(directory: str) -> list[tuple[int, str]]:
    """The producer state snapshots of a partition directory, ``(offset, path)`` by offset."""
    out = [(offset_from_name(n), os.path.join(directory, n)) for n in _names(directory) if n.endswith(".snapshot")]
    return sorted((o, p) for o, p in out if o is not None)


def other_files(directory: str) -> list[tuple[FileKind, str]]:
    """Every file of a partition directory that kgtool decodes and that is not a segment, in
    name order."""
    out = []
    for n in _names(directory):
        p = os.path.join(directory, n)
        k = file_kind(p)
        if k is not None and k is not FileKind.segment and os.path.isfile(p):
            out.append((k, p))
    return out


def map_file(path: str, expected: str = "a file"):
    """A read-only memory map of ``path`` (``b""`` when empty): bounded memory whatever its size.

    Raises:
        InputError: missing, a directory, unreadable.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise input_error(path, exc, expected) from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return b""
        try:
            return mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # not mappable (a pipe, /proc): read it
            with os.fdopen(os.dup(fd), "rb") as fh:
                return fh.read()
    finally:
        os.close(fd)


def file_problem(source: str, position: int, reason: str, *, context: str | None = None,
                 length: int = 0, kind: str = "malformed") -> ScanProblem:
    """Damage in a file of the partition directory, as decode-batch reports it (exit 1):
    ``file: byte N (context): reason``."""
    ctx = f" ({context})" if context else ""
    return ScanProblem(kind=kind, position=position, length=length, reason=reason,
                       message=f"{source}: byte {position}{ctx}: {reason}", source=source, context=context)


def split_inputs(paths: list[str], files: bool, summary: bool) -> tuple[list[str], list[str]]:
    """``decode-batch``'s inputs: the segment inputs (segment files, directories, ``-``) and the
    other files of a partition directory to decode (given by name, or every one of a directory
    with ``files``).

    Raises:
        UsageError: such a file with ``summary``, which reads segments only.
    """
    from kgtool.errors import UsageError
    from kgtool.inputs import STDIN

    segments, others = [], []
    for p in paths:
        if p != STDIN and os.path.isdir(p):
            segments.append(p)
            if files and not summary:
                others.extend(path for _, path in other_files(p))
        elif p != STDIN and file_kind(p) not in (None, FileKind.segment):
            others.append(p)
        else:
            segments.append(p)
    if summary and others:
        raise UsageError(f"--summary reads segments and partition directories, not {others[0]} (decode it "
                         "without --summary)")
    return segments, others
