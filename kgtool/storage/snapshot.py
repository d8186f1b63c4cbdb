"""Producer state snapshots (``N.snapshot``): reader and writer.

Schema (``ProducerStateManager.PID_SNAPSHOT_MAP_SCHEMA``, version 1)::

    ProducerSnapshot =>
      Version => Int16                      1 (PRODUCER_SNAPSHOT_VERSION)
      Crc => Uint32                         CRC-32C of every byte after it
      ProducerEntries => [ProducerEntry]    Int32 count (ArrayOf)
    ProducerEntry =>                        46 bytes
      ProducerId => Int64
      Epoch => Int16
      LastSequence => Int32
      LastOffset => Int64                   -1: no batch metadata (ProducerStateEntry.lastDataOffset)
      OffsetDelta => Int32                  last offset - base offset of that batch
      Timestamp => Int64                    the last batch's (or marker's) timestamp
      CoordinatorEpoch => Int32
      CurrentTxnFirstOffset => Int64        -1: no open transaction

The file's name is the offset the snapshot was taken at (``ProducerStateManager.takeSnapshot``:
the map end offset, i.e. the state after every batch below it).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from kgtool.codec.primitives import crc32c
from kgtool.storage.files import file_problem
from kgtool.storage.indexes import Problems

SNAPSHOT_VERSION = 1
VERSION_OFFSET = 0
CRC_OFFSET = VERSION_OFFSET + 2
PRODUCER_ENTRIES_OFFSET = CRC_OFFSET + 4
HEADER = struct.Struct(">hIi")  # version, crc, entry count
ENTRY = struct.Struct(">qhiqiqiq")


@dataclass(frozen=True, slots=True)
class ProducerEntry:
    """One producer of a snapshot (``ProducerStateEntry`` as ``writeSnapshot`` writes it)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


@dataclass
class SnapshotHeader:
    version: int | None = None
    crc: int | None = None
    computed_crc: int | None = None
    entries: int | None = None

    @property
    def crc_valid(self) -> bool | None:
        return None if self.crc is None or self.computed_crc is None else self.crc == self.computed_crc


def scan_snapshot(path: str, data, header: SnapshotHeader, problems: Problems) -> Iterator[tuple[int, ProducerEntry]]:
    """The producer entries of a snapshot, ``(n, entry)``; ``header`` is filled in first.

    Damage goes to ``problems`` and, as in ``ProducerStateManager.readSnapshot``, stops the
    decoding when nothing after it can be trusted: a file shorter than the header, an unknown
    version ("Snapshot contained an unknown file version"), a negative or impossible entry count
    (``ArrayOf``: the count is checked against the bytes present before anything is read). A CRC
    mismatch ("CRC is no longer valid") is reported and the entries are still shown."""
    n = len(data)
    if n < HEADER.size:
        problems.add(file_problem(path, 0, f"{n} bytes, fewer than the {HEADER.size}-byte header "
                                  "(version, crc, entry count)", context="header", length=n))
        return
    version, crc, count = HEADER.unpack_from(data, 0)
    header.version = version
    if version != SNAPSHOT_VERSION:
        problems.add(file_problem(path, VERSION_OFFSET, f"unknown snapshot version {version} "
                                  f"(ProducerStateManager reads version {SNAPSHOT_VERSION})", context="version"))
        return
    header.crc = crc
    with memoryview(data) as mv:
        header.computed_crc = crc32c(mv[PRODUCER_ENTRIES_OFFSET:])
    header.entries = count
    if crc != header.computed_crc:
        problems.add(file_problem(path, CRC_OFFSET, f"stored crc 0x{crc:08x} != computed 0x{header.computed_crc:08x} "
                                  "(CRC-32C of the bytes after it)", context="crc"))
    room = n - HEADER.size
    if count < 0 or count * ENTRY.size > room:
        why = "is negative" if count < 0 else f"needs {count * ENTRY.size} bytes, {room} remain"
        problems.add(file_problem(path, PRODUCER_ENTRIES_OFFSET, f"entry count {count} {why}", context="producer_entries"))
        return
    with memoryview(data) as mv:
        body = mv[HEADER.size:HEADER.size + count * ENTRY.size]
        for i, t in enumerate(ENTRY.iter_unpack(body)):
            yield i, ProducerEntry(*t)
        del body
    extra = room - count * ENTRY.size
    if extra:
        # Schema.read stops after the array; Kafka ignores what follows (the CRC covers it).
        problems.add(file_problem(path, HEADER.size + count * ENTRY.size,
                                  f"{extra} bytes after the {count} entries", context="producer_entries",
                                  length=extra))


def encode_snapshot(entries, *, version: int = SNAPSHOT_VERSION, crc: int | None = None) -> bytes:
    """A snapshot file of :class:`ProducerEntry` (or tuples in its field order), CRC computed
    (``ProducerStateManager.writeSnapshot``) unless ``crc`` is given."""
    body = struct.pack(">i", len(entries)) + b"".join(ENTRY.pack(*tuple(e)) if not isinstance(e, ProducerEntry)
                                                      else ENTRY.pack(*_fields(e)) for e in entries)
    return struct.pack(">hI", version, crc32c(body) if crc is None else crc) + body


def _fields(e: ProducerEntry) -> tuple:
    return (e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp,
            e.coordinator_epoch, e.current_txn_first_offset)
