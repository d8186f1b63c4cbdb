"""One entry point to decode any non-segment file of a partition directory: rows plus damage.

:func:`decode_file` returns a :class:`DecodedFile` whose :meth:`~DecodedFile.rows` are produced
lazily (a 10 MiB preallocated index, or a garbage file of millions of "entries", is streamed,
never held), in the field names of the Kafka class that writes the file, in snake_case.
Problems (file, byte position, reason) and notes (not damage: an untrimmed index's preallocated
tail) are complete once the rows have been read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kgtool.errors import InputError
from kgtool.storage import checkpoints, snapshot
from kgtool.storage.files import FileKind, file_kind, map_file, offset_from_name
from kgtool.storage.indexes import Problems, SparseIndex, scan_txn_index

#: The columns of each kind's rows, in order.
COLUMNS: dict[FileKind, tuple[str, ...]] = {
    FileKind.offset_index: ("entry", "offset", "position"),
    FileKind.time_index: ("entry", "timestamp", "offset"),
    FileKind.txn_index: ("entry", "version", "producer_id", "first_offset", "last_offset", "last_stable_offset"),
    FileKind.producer_snapshot: ("entry", "producer_id", "producer_epoch", "last_sequence", "last_offset",
                                 "offset_delta", "timestamp", "coordinator_epoch", "current_txn_first_offset"),
    FileKind.leader_epoch_checkpoint: ("entry", "epoch", "start_offset"),
    FileKind.offset_checkpoint: ("entry", "topic", "partition", "offset"),
    FileKind.partition_metadata: ("version", "topic_id"),
}


@dataclass
class DecodedFile:
    """A decoded file: ``header`` (file-level fields), lazy rows, problems and notes."""

    path: str
    kind: FileKind
    header: dict[str, Any]
    problems: Problems
    notes: list[str] = field(default_factory=list)
    _rows: Iterator[dict] | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        return COLUMNS[self.kind]

    def rows(self) -> Iterator[dict]:
        """The entries, once (a generator over the mapped file)."""
        rows, self._rows = self._rows, None
        if rows is not None:
            yield from rows


def _log_size(index_path: str) -> int | None:
    stem, _ = os.path.splitext(index_path)
    try:
        return os.path.getsize(stem + ".log")
    except OSError:
        return None


def decode_file(path: str, kind: FileKind | None = None) -> DecodedFile:
    """Decode one file of a partition (or broker log) directory.

    Args:
        path: the file. kind: its kind (default: from its name, :func:`file_kind`).

    Raises:
        InputError: unreadable, or not a kind kgtool decodes.
    """
    kind = kind or file_kind(path)
    if kind is None or kind is FileKind.segment:
        raise InputError(f"{path}: not an index, snapshot or checkpoint file")
    data = map_file(path)
    problems = Problems()
    out = DecodedFile(path, kind, {"kind": kind.value, "size": len(data)}, problems)
    if kind in (FileKind.offset_index, FileKind.time_index):
        base = offset_from_name(path)
        out.header["base_offset"] = base
        if base is None:
            out.notes.append(f"{path}: no base offset in the file name (NNNNNNNNNNNNNNNNNNNN.index): offsets "
                             "are shown relative to 0")
            base = 0
        out._rows = _index_rows(out, SparseIndex(path, base, data, kind), _log_size(path) if kind is
                                FileKind.offset_index else None)
    elif kind is FileKind.txn_index:
        base = offset_from_name(path) or 0
        out.header["base_offset"] = base
        out._rows = ({"entry": n, "version": e.version, "producer_id": e.producer_id, "first_offset": e.first_offset,
                      "last_offset": e.last_offset, "last_stable_offset": e.last_stable_offset}
                     for n, e in scan_txn_index(path, data, base, problems))
    elif kind is FileKind.producer_snapshot:
        out._rows = _snapshot_rows(out, data)
    elif kind is FileKind.partition_metadata:
        out._rows = _metadata_rows(out, data)
    else:
        out._rows = _checkpoint_rows(out, data)
    return out


def _index_rows(out: DecodedFile, index: SparseIndex, log_size: int | None) -> Iterator[dict]:
    a_name, b_name = ("offset", "position") if index.kind is FileKind.offset_index else ("timestamp", "offset")
    for n, a, b in index.scan(out.problems, log_size):
        yield {"entry": n, a_name: a, b_name: b}
    out.header["entries"] = index.entries
    out.header["preallocated_entries"] = index.preallocated
    if index.preallocated and index.entries < index.slots:
        out.notes.append(preallocated_note(index))


def preallocated_note(index: SparseIndex) -> str:
    """The note for an untrimmed index (not damage)."""
    return (f"{index.path}: {index.preallocated} preallocated empty entries after entry {index.entries - 1} "
            f"(an untrimmed index: the active segment of a running broker; the entries end at the first one "
            f"after the first whose offset is the base offset {index.base_offset})"
            if index.entries else
            f"{index.path}: {index.preallocated} preallocated empty entries, none written (an untrimmed index)")


def _snapshot_rows(out: DecodedFile, data) -> Iterator[dict]:
    header = snapshot.SnapshotHeader()
    out.header["offset"] = offset_from_name(out.path)
    for n, e in snapshot.scan_snapshot(out.path, data, header, out.problems):
        if n == 0:
            out.header.update(version=header.version, crc=header.crc, crc_valid=header.crc_valid)
        yield {"entry": n, "producer_id": e.producer_id, "producer_epoch": e.producer_epoch,
               "last_sequence": e.last_sequence, "last_offset": e.last_offset, "offset_delta": e.offset_delta,
               "timestamp": e.timestamp, "coordinator_epoch": e.coordinator_epoch,
               "current_txn_first_offset": e.current_txn_first_offset}
    out.header.update(version=header.version, crc=header.crc, crc_valid=header.crc_valid, entries=header.entries)


def _checkpoint_rows(out: DecodedFile, data) -> Iterator[dict]:
    header = checkpoints.CheckpointHeader()
    epochs = out.kind is FileKind.leader_epoch_checkpoint
    for n, e in checkpoints.scan_checkpoint(out.path, data, out.kind, header, out.problems):
        if epochs:
            yield {"entry": n, "epoch": e[0], "start_offset": e[1]}
        else:
            yield {"entry": n, "topic": e[0], "partition": e[1], "offset": e[2]}
    out.header.update(version=header.version, entries=header.count)


def _metadata_rows(out: DecodedFile, data) -> Iterator[dict]:
    m = checkpoints.read_partition_metadata(out.path, data, out.problems)
    out.header.update(version=m.version, topic_id=m.topic_id)
    if m.version is not None:
        yield {"version": m.version, "topic_id": m.topic_id}
