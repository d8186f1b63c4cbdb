"""Text checkpoint files: leader epochs, offsets per partition, partition metadata.

``CheckpointFile`` (server-common, ``org.apache.kafka.server.common.CheckpointFile``) writes::

    <version>            0 for both formats below
    <count>
    <entry>              count lines, fields separated by white space

``LeaderEpochCheckpointFile`` (``leader-epoch-checkpoint`` in a partition directory): an entry
is ``epoch start_offset`` (``EpochEntry``). ``OffsetCheckpointFile`` (``replication-offset-checkpoint``,
``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``
in the broker's log directory): ``topic partition offset``. The reader
(``CheckpointFile.CheckpointReadBuffer``) rejects another version ("Unrecognised version"), a
line the formatter cannot parse ("Malformed line in checkpoint file"), and a count that does not
match the lines ("Expected N entries ... but found only M").

``PartitionMetadataFile`` (``partition.metadata``)::

    version: 0
    topic_id: <Uuid, base64url without padding>

(``PartitionMetadataReadBuffer``: each line split on ``:\\s+``; the zero UUID is invalid.)
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass

from kgtool.storage.files import FileKind, file_problem
from kgtool.storage.indexes import Problems

CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0
#: Longest line read: topic names are at most 249 characters; anything longer is not a checkpoint.
MAX_LINE = 4096


@dataclass
class CheckpointHeader:
    version: int | None = None
    count: int | None = None


def _lines(data) -> Iterator[tuple[int, bytes, bool]]:
    """``(byte position, line without its end, too_long)`` of a text file, never holding more
    than :data:`MAX_LINE` bytes of one line."""
    n = len(data)
    pos = 0
    while pos < n:
        nl = data.find(b"\n", pos, min(n, pos + MAX_LINE + 1))
        if nl < 0:
            if n - pos > MAX_LINE:
                yield pos, bytes(data[pos:pos + MAX_LINE]), True
                return
            nl = n
        line = bytes(data[pos:nl])
        yield pos, line[:-1] if line.endswith(b"\r") else line, False
        pos = nl + 1


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace")


def scan_checkpoint(path: str, data, kind: FileKind, header: CheckpointHeader,
                    problems: Problems) -> Iterator[tuple[int, tuple]]:
    """The entries of a ``CheckpointFile``: ``(n, (epoch, start_offset))`` for a leader-epoch
    checkpoint, ``(n, (topic, partition, offset))`` for an offset checkpoint. A bad version
    stops the reading (as ``CheckpointReadBuffer`` does); a malformed line is reported and
    skipped; the count is checked at the end."""
    fields = 2 if kind is FileKind.leader_epoch_checkpoint else 3
    n = 0
    for lineno, (pos, raw, too_long) in enumerate(_lines(data)):
        if too_long:
            problems.add(file_problem(path, pos, f"line {lineno + 1} is longer than {MAX_LINE} bytes: not a "
                                      "checkpoint file", context=f"line {lineno + 1}"))
            return
        text = _text(raw)
        if lineno < 2:
            what = "version" if lineno == 0 else "count"
            try:
                value = int(text.strip())
            except ValueError:
                problems.add(file_problem(path, pos, f"{what} line {text[:80]!r} is not an integer",
                                          context=what))
                return
            if lineno == 0:
                header.version = value
                if value != CHECKPOINT_VERSION:
                    problems.add(file_problem(path, pos, f"unrecognised version {value}, expected "
                                              f"{CHECKPOINT_VERSION} (CheckpointFile)", context="version"))
                    return
            else:
                header.count = value
                if value < 0:
                    problems.add(file_problem(path, pos, f"entry count {value} is negative", context="count"))
                    return
            continue
        if not text.strip() and pos + len(raw) + 1 >= len(data):
            break  # a blank last line
        parts = text.split()
        entry = None
        if len(parts) == fields:
            try:
                if fields == 2:
                    entry = (int(parts[0]), int(parts[1]))
                else:
                    entry = (parts[0], int(parts[1]), int(parts[2]))
            except ValueError:
                entry = None
        if entry is None:
            shape = "epoch start_offset" if fields == 2 else "topic partition offset"
            problems.add(file_problem(path, pos, f"malformed line {lineno + 1} {text[:80]!r}: expected "
                                      f"'{shape}'", context=f"line {lineno + 1}"))
            continue
        yield n, entry
        n += 1
    if header.version is None:
        problems.add(file_problem(path, 0, "empty: no version line", context="version"))
    elif header.count is None:
        problems.add(file_problem(path, len(data), "no count line after the version", context="count"))
    elif n != header.count:
        problems.add(file_problem(path, len(data), f"expected {header.count} entries, found {n} "
                                  "(CheckpointFile)", context="count"))


@dataclass
class PartitionMetadata:
    version: int | None = None
    topic_id: str | None = None


def read_partition_metadata(path: str, data, problems: Problems) -> PartitionMetadata:
    """``partition.metadata``: version 0 and the topic id (``PartitionMetadataReadBuffer``)."""
    out = PartitionMetadata()
    lines = list(_lines(data[:2 * MAX_LINE]))
    for idx, key in enumerate(("version", "topic_id")):
        if idx >= len(lines):
            problems.add(file_problem(path, len(data), f"no '{key}:' line", context=key))
            return out
        pos, raw, _ = lines[idx]
        text = _text(raw)
        parts = text.split(":", 1)
        if len(parts) != 2 or parts[0].strip() != key or not parts[1].strip():
            problems.add(file_problem(path, pos, f"malformed line {text[:80]!r}: expected '{key}: ...'", context=key))
            return out
        value = parts[1].strip()
        if key == "version":
            try:
                out.version = int(value)
            except ValueError:
                out.version = None
            if out.version != PARTITION_METADATA_VERSION:
                problems.add(file_problem(path, pos, f"unrecognised version {value[:20]!r}, expected "
                                          f"{PARTITION_METADATA_VERSION} (PartitionMetadataFile)", context=key))
                return out
        else:
            out.topic_id = value
            try:
                raw_id = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
            except (binascii.Error, ValueError):
                raw_id = b""
            if len(raw_id) != 16:
                problems.add(file_problem(path, pos, f"topic id {value[:40]!r} is not a UUID (22 characters of "
                                          "base64url, Uuid.fromString)", context=key))
            elif raw_id == b"\0" * 16:
                problems.add(file_problem(path, pos, "topic id is the zero UUID (invalid: PartitionMetadataReadBuffer)",
                                          context=key))
    return out


def encode_checkpoint(entries) -> bytes:
    """A ``CheckpointFile`` (version 0) of tuples, fields separated by a space."""
    lines = [str(CHECKPOINT_VERSION), str(len(entries))] + [" ".join(map(str, e)) for e in entries]
    return ("\n".join(lines) + "\n").encode()


def encode_partition_metadata(topic_id: bytes) -> bytes:
    """``partition.metadata`` for a 16-byte topic id."""
    tid = base64.urlsafe_b64encode(topic_id).decode().rstrip("=")
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {tid}\n".encode()
