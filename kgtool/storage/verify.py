"""``--verify``: a partition directory's indexes, snapshots and checkpoints against its log.

``kafka-dump-log --verify-index-only`` (``DumpLogSegments.dumpIndex``/``dumpTimeIndex``) and more,
in one pass over the batch headers of every segment (:func:`kgtool.storage.logview.batch_headers`;
CRCs are not computed, as with ``--verify-index-only``: a decode or ``--summary`` checks them):

- ``.index``: every entry is the start of the batch whose *last* offset is the entry's offset
  (``LogSegment.append``; KAFKA-7487 made DumpLogSegments compare with the last offset); offsets
  and positions strictly increase, positions lie inside the log.
- ``.timeindex``: timestamps strictly increase; the entry's offset is in a batch of the segment
  and its timestamp is the largest batch max timestamp of the segment up to that batch.
- ``.txnindex``: every ABORT marker that ends a transaction has an entry (producer id, first
  offset of the transaction, the marker's offset), and every entry has its ABORT marker in the
  same segment (``TransactionIndex``: "entries correspond to the transactions whose commit
  markers were written in the corresponding log segment").
- ``.snapshot``: the CRC-32C; each producer's last offset, epoch, last sequence, offset delta
  and open transaction agree with the log below the snapshot's offset.
- ``leader-epoch-checkpoint``: every batch at or after an epoch's start offset and before the
  next one's carries that partition leader epoch (so each start offset is the first batch of
  its epoch).

What a healthy log legitimately has is not reported as a mismatch but counted in notes:
- a multi-batch append indexed as one entry (the append's last offset, the position of its
  first batch): ``LogSegment.append`` before KAFKA-806 wrote that for a follower's appends; time
  index offsets inside a batch (before KAFKA-16310, the record with the largest timestamp);
- history the directory no longer holds: segments deleted by retention (offsets below the first
  segment), epochs and producers whose batches are gone, checkpoint entries past the log end
  (the epoch cache's file is flushed asynchronously after a truncation);
- compacted segments: offsets missing between batches. Where such a gap lies between the
  things compared (a transaction's first batch and its marker, a COMMIT marker the cleaner
  removed), what cannot be rebuilt from the log is not judged.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field

from kgtool.codec.model import RecordBatch
from kgtool.codec.segment import open_segment
from kgtool.codec.summary import TAIL_KINDS
from kgtool.storage import checkpoints, snapshot
from kgtool.storage.files import FileKind, SegmentFiles, list_segments, list_snapshots, map_file, segment_of
from kgtool.storage.files import LEADER_EPOCH_FILE
from kgtool.storage.indexes import OFFSET_ENTRY, OUT_OF_ORDER, AbortedTxn, Problems, SparseIndex, scan_txn_index
from kgtool.storage.logview import batch_headers
from kgtool.storage.producers import ABORT, ProducerStates, marker_of

#: Mismatch rows kept (the rest are counted).
MAX_ROWS = 10000


@dataclass(frozen=True)
class Mismatch:
    """One row of ``--verify``: what disagrees with the log, where."""

    kind: str
    file: str
    entry: int | None
    expected: str
    found: str


@dataclass
class VerifyReport:
    rows: list[Mismatch] = field(default_factory=list)
    count: int = 0
    notes: Counter = field(default_factory=Counter)
    checked: Counter = field(default_factory=Counter)

    def add(self, kind: FileKind | str, file: str, entry: int | None, expected: str, found: str) -> None:
        self.count += 1
        if len(self.rows) < MAX_ROWS:
            self.rows.append(Mismatch(getattr(kind, "value", kind), file, entry, expected, found))

    def note(self, text: str, n: int = 1) -> None:
        self.notes[text] += n

    def problems(self, kind: FileKind, problems: Problems) -> None:
        for p in problems.items:
            self.add(kind, p.source or "", None, "a well-formed file", f"byte {p.position}: {p.reason}")
        if problems.count > len(problems.items):
            self.add(kind, problems.items[0].source or "", None, "a well-formed file",
                     f"{problems.count - len(problems.items)} more problems")


@dataclass(slots=True)
class _Covered:
    """The held batch covering a wanted offset."""

    producer_id: int
    base_offset: int
    last_offset: int
    producer_epoch: int
    last_sequence: int
    is_control: bool


class _Gaps:
    """Offsets the files do not hold: below the first batch, and between batches (compaction,
    missing segments, skipped damage)."""

    def __init__(self) -> None:
        self.first_held: int | None = None
        self.starts = array("q")
        self.ends = array("q")
        self.prev_last: int | None = None

    def see(self, b: RecordBatch) -> None:
        if self.first_held is None:
            self.first_held = b.base_offset
        elif b.base_offset > self.prev_last + 1:
            self.starts.append(self.prev_last + 1)
            self.ends.append(b.base_offset - 1)
        self.prev_last = max(b.last_offset, self.prev_last if self.prev_last is not None else b.last_offset)

    @property
    def count(self) -> int:
        return len(self.starts)

    def any_between(self, lo: int, hi: int) -> bool:
        """Whether some offset in ``[lo, hi]`` is not held."""
        if self.first_held is None or lo < self.first_held:
            return True
        k = bisect_right(self.starts, hi) - 1
        return k >= 0 and self.ends[k] >= lo


class _Verifier:
    def __init__(self, segments: list[SegmentFiles], snapshots: list[tuple[int, str]],
                 epochs_file: str | None, report: VerifyReport) -> None:
        self.segments = segments
        self.r = report
        self.states = ProducerStates()
        self.gaps = _Gaps()
        self.last_marker: dict[int, int] = {}
        self.txn_gaps_at_start: dict[int, int] = {}
        self.snapshots = snapshots
        self.snap_i = 0
        self.wanted: list[int] = []
        self.covered: dict[int, _Covered] = {}
        self.snapshot_entries: dict[int, tuple[str, list[snapshot.ProducerEntry]]] = {}
        self._load_snapshots()
        self.epochs: list[tuple[int, int]] = []
        self.epochs_file = epochs_file
        if epochs_file:
            self._load_epochs(epochs_file)
        self.epoch_starts = [s for _, s in self.epochs]
        self.epoch_seen: set[int] = set()
        self.epoch_run: list | None = None
        self.wanted = sorted(set(self.wanted))
        self.want_i = 0

    # --- inputs -----------------------------------------------------------------------------

    def _load_snapshots(self) -> None:
        for offset, path in self.snapshots:
            problems = Problems()
            header = snapshot.SnapshotHeader()
            entries = [e for _, e in snapshot.scan_snapshot(path, map_file(path), header, problems)]
            self.r.problems(FileKind.producer_snapshot, problems)
            if header.version != snapshot.SNAPSHOT_VERSION or header.entries is None or len(entries) != header.entries:
                continue  # nothing to compare: reported above
            self.r.checked["producer_snapshot"] += 1
            self.snapshot_entries[offset] = (path, entries)
            self.wanted.extend(e.last_offset for e in entries if 0 <= e.last_offset < offset)

    def _load_epochs(self, path: str) -> None:
        problems = Problems()
        header = checkpoints.CheckpointHeader()
        entries = [e for _, e in checkpoints.scan_checkpoint(path, map_file(path), FileKind.leader_epoch_checkpoint,
                                                             header, problems)]
        self.r.problems(FileKind.leader_epoch_checkpoint, problems)
        for n in range(1, len(entries)):
            (pe, ps), (e, s) = entries[n - 1], entries[n]
            if e <= pe or s <= ps:
                self.r.add(FileKind.leader_epoch_checkpoint, path, n,
                           f"epoch and start offset above the previous entry's ({pe}, {ps}) (LeaderEpochFileCache)",
                           f"epoch {e} from offset {s}")
                return  # an unordered cache says nothing about ranges
        self.epochs = entries

    # --- the pass ---------------------------------------------------------------------------

    def run(self) -> None:
        end = None
        for seg in self.segments:
            end = self._segment(seg)
        while self.snap_i < len(self.snapshots):
            self._check_snapshot(self.snapshots[self.snap_i][0], end)
            self.snap_i += 1
        self._flush_epoch_run()
        self._epoch_notes(end)
        if self.gaps.count:
            self.r.note("offset gaps between batches (compacted segments, missing segments or skipped damage): "
                        "comparisons across them are not judged", self.gaps.count)

    def _segment(self, seg: SegmentFiles) -> int | None:
        r = self.r
        data, size = open_segment(seg.log)
        oi = self._sparse(seg.index, seg.base_offset, FileKind.offset_index, size)
        ti = self._sparse(seg.timeindex, seg.base_offset, FileKind.time_index, None)
        txn = self._txn(seg)
        o_k = t_k = 0
        starts: dict[int, int] | None = {} if oi is not None and oi[3] else None  # out of order: by entry
        pending = None  # (entry, offset, position) of an entry that may cover a multi-batch append
        seg_max = -1
        last = None
        epoch_range = (0, -1, None)
        # Headers only, no CRC (as kafka-dump-log --verify-index-only): what is compared is the
        # bookkeeping; a decode or --summary checks the CRCs.
        for b in batch_headers(data, source=seg.log, verify_crc=False):
            if not isinstance(b, RecordBatch):
                if b.kind in TAIL_KINDS:
                    r.note(f"{seg.log}: {b.reason}")
                else:
                    r.add(FileKind.segment, seg.log, None, "a valid batch", b.message)
                continue
            last = b
            gaps = self.gaps  # first: a gap just below a snapshot's offset counts for it
            if gaps.prev_last is None or b.base_offset != gaps.prev_last + 1 or b.last_offset < gaps.prev_last:
                gaps.see(b)
            else:
                gaps.prev_last = b.last_offset
            while self.snap_i < len(self.snapshots) and self.snapshots[self.snap_i][0] <= b.base_offset:
                self._check_snapshot(self.snapshots[self.snap_i][0], b.base_offset)
                self.snap_i += 1
            if self.want_i < len(self.wanted) and self.wanted[self.want_i] <= b.last_offset:
                self._want(b)
            if self.epochs:
                lo, hi, epoch = epoch_range
                if lo <= b.base_offset < hi and b.partition_leader_epoch == epoch and self.epoch_run is None:
                    r.checked["leader_epoch_batches"] += 1
                else:
                    self._epoch(b, seg)
                    epoch_range = self._epoch_range(b.base_offset)
            # --- offset index
            if starts is not None:
                starts[b.position] = b.last_offset
            elif oi is not None:
                offs, poss, path, _ = oi
                if pending is not None and b.position > pending[2]:
                    if b.last_offset == pending[1]:
                        r.note("offset index entries cover a multi-batch append (the append's last offset, its first "
                               "batch's position: LogSegment.append before KAFKA-806, e.g. a follower's); reads stay "
                               "correct")
                        pending = None
                    elif b.last_offset > pending[1]:
                        r.add(FileKind.offset_index, path, pending[0],
                              f"offset {pending[1]}: the last offset of the batch at position {pending[2]} or of a "
                              "later batch of the same append", f"no batch ends at offset {pending[1]}")
                        pending = None
                while o_k < len(offs) and poss[o_k] <= b.position:
                    o, p = offs[o_k], poss[o_k]
                    r.checked["offset_index"] += 1
                    if p < b.position:
                        r.add(FileKind.offset_index, path, o_k, f"offset {o} at the start of a batch",
                              f"position {p} is not the start of a batch")
                    elif o == b.last_offset:
                        pass
                    elif o > b.last_offset:
                        pending = (o_k, o, p)
                    else:
                        r.add(FileKind.offset_index, path, o_k,
                              f"offset {b.last_offset} (the last offset of batch@{p}, KAFKA-7487)", f"offset {o}")
                    o_k += 1
            # --- time index
            if b.max_timestamp > seg_max:
                seg_max = b.max_timestamp
            if ti is not None:
                tss, toffs, tpath, _ = ti
                while t_k < len(toffs) and toffs[t_k] <= b.last_offset:
                    t, o = tss[t_k], toffs[t_k]
                    r.checked["time_index"] += 1
                    if o < b.base_offset:
                        r.add(FileKind.time_index, tpath, t_k, f"offset {o} in a batch of the segment",
                              f"no batch holds offset {o}")
                    elif t != seg_max:
                        r.add(FileKind.time_index, tpath, t_k,
                              f"timestamp {seg_max} (the largest batch timestamp up to batch@{b.position}, "
                              f"offsets {b.base_offset}..{b.last_offset})", f"timestamp {t}")
                    elif o != b.last_offset:
                        r.note("time index offsets inside a batch (the record with the largest timestamp: brokers "
                               "before KAFKA-16310)")
                    t_k += 1
            # --- producers, markers, the transaction index
            if b.producer_id >= 0:
                self._producer(b, seg, txn)
        # --- what the segment's indexes list beyond its batches
        if starts is not None:
            self._by_entry(oi, starts)
        elif oi is not None:
            offs, poss, path, _ = oi
            if pending is not None:
                r.add(FileKind.offset_index, path, pending[0], f"offset {pending[1]}: the last offset of a batch",
                      f"no batch from position {pending[2]} ends at offset {pending[1]}")
            for k in range(o_k, len(offs)):
                r.checked["offset_index"] += 1
                if poss[k] < size:  # past the end: reported with the file's structure
                    r.add(FileKind.offset_index, oi[2], k, f"offset {offs[k]} at the start of a batch",
                          f"position {poss[k]} holds no batch")
        if ti is not None:
            for k in range(t_k, len(ti[1])):
                r.checked["time_index"] += 1
                r.add(FileKind.time_index, ti[2], k, "an offset of the segment's batches",
                      f"offset {ti[1][k]} is past the segment's last offset "
                      f"{'none' if last is None else last.last_offset}")
        if txn is not None:
            path, left = txn
            for n, e in sorted(left.values()):
                r.add(FileKind.txn_index, path, n, f"an ABORT marker of producer {e.producer_id} at offset "
                      f"{e.last_offset} in {os.path.basename(seg.log)}", "no such marker")
        return None if last is None else last.last_offset + 1

    def _sparse(self, path: str | None, base: int, kind: FileKind, log_size: int | None):
        if path is None:
            return None
        problems = Problems()
        index = SparseIndex(path, base, map_file(path), kind)
        a, b = array("q"), array("q")
        for _, x, y in index.scan(problems, log_size):
            a.append(x)
            b.append(y)
        if index.preallocated and index.entries < index.slots:
            self.r.note("untrimmed indexes (preallocated empty entries after the last one: an active segment)")
            self.r.checked["preallocated_entries"] += index.preallocated
        disorder = [p for p in problems.items if p.kind == OUT_OF_ORDER]
        if kind is FileKind.offset_index and disorder and len(disorder) == problems.count:
            return (a, b, path, disorder)  # compared entry by entry (_by_entry), then judged
        self.r.problems(kind, problems)
        if problems.count:
            self.r.note(f"{path}: entries not compared with the log (the file is damaged)")
            return None
        return (a, b, path, [])

    def _by_entry(self, oi, starts: dict[int, int]) -> None:
        """An offset index out of order, compared as ``DumpLogSegments.dumpIndex`` compares it:
        each entry with the batch at its position (``starts``: position -> last offset), so the
        entry that is wrong is named; an order problem is reported only where neither its entry
        nor the one before it is wrong that way (both right, yet out of order)."""
        offs, poss, path, disorder = oi
        r = self.r
        wrong = set()
        for k, (o, p) in enumerate(zip(offs, poss)):
            r.checked["offset_index"] += 1
            last = starts.get(p)
            if last is None:
                r.add(FileKind.offset_index, path, k, f"offset {o} at the start of a batch",
                      f"position {p} is not the start of a batch")
            elif o != last:
                r.add(FileKind.offset_index, path, k, f"offset {last} (the last offset of batch@{p}, KAFKA-7487)",
                      f"offset {o}")
            else:
                continue
            wrong.add(k)
        size = OFFSET_ENTRY.size
        for p in disorder:
            n = p.position // size
            if n not in wrong and n - 1 not in wrong:
                r.add(FileKind.offset_index, p.source or path, None, "a well-formed file",
                      f"byte {p.position}: {p.reason}")

    def _txn(self, seg: SegmentFiles):
        if seg.txnindex is None:
            return None
        problems = Problems()
        left = {}
        for n, e in scan_txn_index(seg.txnindex, map_file(seg.txnindex), seg.base_offset, problems):
            left.setdefault(e.last_offset, (n, e))
        self.r.problems(FileKind.txn_index, problems)
        return seg.txnindex, left

    # --- producers and transactions ---------------------------------------------------------

    def _producer(self, b: RecordBatch, seg: SegmentFiles, txn) -> None:
        pid = b.producer_id
        if pid < 0:
            return
        before = self.states.producers.get(pid)
        txn_first = before.current_txn_first_offset if before is not None else None
        exact = txn_first is not None and self.txn_gaps_at_start.get(pid) == self.gaps.count
        self.states.apply(b)
        if not b.is_control:
            if txn_first is None and b.is_transactional:
                self.txn_gaps_at_start[pid] = self.gaps.count
            return
        m = marker_of(b)
        if m is None:
            return
        offset = b.base_offset
        self.last_marker[pid] = offset
        entry = txn[1].pop(offset, None) if txn is not None else None
        path = txn[0] if txn is not None else (os.path.splitext(seg.log)[0] + ".txnindex")
        if m[0] != ABORT:
            if entry is not None:
                self.r.add(FileKind.txn_index, path, entry[0], f"an ABORT marker at offset {offset}",
                           f"a COMMIT marker of producer {pid}")
            return
        self.r.checked["abort_markers"] += 1
        if entry is None:
            if txn_first is None:
                return  # an empty transaction: no CompletedTxn, no entry
            if exact:
                self.r.add(FileKind.txn_index, path, None,
                           f"AbortedTxn(producer {pid}, first offset {txn_first}, last offset {offset})",
                           "no entry")
            else:
                self.r.note("ABORT markers without an entry after an offset gap (compaction removed the "
                            "transaction's batches): not judged")
            return
        n, e = entry
        self._check_entry(path, n, e, pid, offset, txn_first, exact)

    def _check_entry(self, path: str, n: int, e: AbortedTxn, pid: int, offset: int, txn_first: int | None,
                     exact: bool) -> None:
        r = self.r
        if e.producer_id != pid:
            r.add(FileKind.txn_index, path, n, f"producer {pid} (of the ABORT marker at {offset})",
                  f"producer {e.producer_id}")
        if e.last_stable_offset > offset + 1:
            r.add(FileKind.txn_index, path, n, f"a last stable offset of at most {offset + 1}",
                  f"last stable offset {e.last_stable_offset}")
        if txn_first is None or e.first_offset == txn_first:
            if txn_first is None:
                r.note("transaction index entries whose transaction's batches the files no longer hold "
                       "(deleted or compacted): first offset not judged")
            return
        if e.first_offset < txn_first:
            ok = self.gaps.any_between(e.first_offset, txn_first - 1)
        else:
            ok = not exact
        if ok:
            r.note("transaction index first offsets across an offset gap (deleted or compacted history): "
                   "not judged")
        else:
            r.add(FileKind.txn_index, path, n,
                  f"first offset {txn_first} (the first batch of producer {pid}'s transaction)",
                  f"first offset {e.first_offset}")

    # --- snapshots --------------------------------------------------------------------------

    def _want(self, b: RecordBatch) -> None:
        w = self.wanted
        while self.want_i < len(w) and w[self.want_i] <= b.last_offset:
            o = w[self.want_i]
            if o >= b.base_offset:
                self.covered[o] = _Covered(b.producer_id, b.base_offset, b.last_offset, b.producer_epoch,
                                           b.last_sequence, b.is_control)
            self.want_i += 1

    def _check_snapshot(self, offset: int, log_end: int | None) -> None:
        got = self.snapshot_entries.get(offset)
        if got is None:
            return
        path, entries = got
        r = self.r
        if log_end is None or offset > log_end:
            r.note("snapshots past the log end offset (Kafka deletes them when it loads the log)")
        in_snapshot = set()
        for n, e in enumerate(entries):
            pid = e.producer_id
            in_snapshot.add(pid)
            s = self.states.producers.get(pid)
            if e.last_offset >= offset:
                r.add(FileKind.producer_snapshot, path, n, f"producer {pid}: a last offset below {offset}",
                      f"last offset {e.last_offset}")
                continue
            if s is not None and e.producer_epoch < s.producer_epoch:
                r.add(FileKind.producer_snapshot, path, n,
                      f"producer {pid}: epoch {s.producer_epoch} (its last batch or marker below {offset})",
                      f"epoch {e.producer_epoch}")
            if e.last_offset >= 0:
                self._check_last_batch(path, n, e, s, offset)
            marker = self.last_marker.get(pid, -1)
            if e.current_txn_first_offset >= 0 and marker > e.current_txn_first_offset:
                r.add(FileKind.producer_snapshot, path, n,
                      f"producer {pid}: no open transaction (the marker at offset {marker} ended it)",
                      f"current_txn_first_offset {e.current_txn_first_offset}")
            elif (e.current_txn_first_offset < 0 and s is not None and s.current_txn_first_offset is not None
                  and self.txn_gaps_at_start.get(pid) == self.gaps.count):
                r.add(FileKind.producer_snapshot, path, n,
                      f"producer {pid}: current_txn_first_offset {s.current_txn_first_offset} (a transaction "
                      f"open below {offset})", "current_txn_first_offset -1")
        missing = sum(1 for pid, s in self.states.producers.items() if pid not in in_snapshot and s.last_batch)
        if missing:
            r.note("producers of the log missing from a snapshot (expired: producer.id.expiration.ms)", missing)

    def _check_last_batch(self, path: str, n: int, e: snapshot.ProducerEntry, s, offset: int) -> None:
        r = self.r
        pid = e.producer_id
        if s is not None and s.last_batch is not None and s.last_batch[1] > e.last_offset:
            r.add(FileKind.producer_snapshot, path, n,
                  f"producer {pid}: last offset {s.last_batch[1]} (its last batch below {offset})",
                  f"last offset {e.last_offset}")
            return
        c = self.covered.get(e.last_offset)
        if c is None:
            r.note("snapshot entries whose batch the files no longer hold (deleted or compacted): not judged")
            return
        if c.producer_id != pid or c.last_offset != e.last_offset or c.is_control:
            what = "a control batch" if c.is_control else f"a batch of producer {c.producer_id}"
            r.add(FileKind.producer_snapshot, path, n, f"producer {pid}: a batch ending at offset {e.last_offset}",
                  f"{what}, offsets {c.base_offset}..{c.last_offset}")
            return
        for name, want, have in (("epoch", c.producer_epoch, e.producer_epoch),
                                 ("last sequence", c.last_sequence, e.last_sequence),
                                 ("offset delta", c.last_offset - c.base_offset, e.offset_delta)):
            if want != have:
                r.add(FileKind.producer_snapshot, path, n,
                      f"producer {pid}: {name} {want} (the batch at offsets {c.base_offset}..{c.last_offset})",
                      f"{name} {have}")

    # --- leader epochs ----------------------------------------------------------------------

    def _epoch(self, b: RecordBatch, seg: SegmentFiles) -> None:
        if not self.epochs or b.partition_leader_epoch < 0:
            return
        ple = b.partition_leader_epoch
        k = bisect_right(self.epoch_starts, b.base_offset) - 1
        self.r.checked["leader_epoch_batches"] += 1
        if k < 0:
            # Before the first start offset: the cache's first entry may have been moved up to
            # the log start offset (LeaderEpochFileCache.truncateFromStart).
            ok = ple <= self.epochs[0][0]
        else:
            ok = ple == self.epochs[k][0]
            if ok:
                self.epoch_seen.add(k)
        if ok:
            self._flush_epoch_run()
            return
        key = (seg.log, k, ple)
        if self.epoch_run is not None and self.epoch_run[0] == key:
            self.epoch_run[2] += 1
            return
        self._flush_epoch_run()
        self.epoch_run = [key, b, 1]

    def _epoch_range(self, offset: int) -> tuple[int, int, int | None]:
        """The offsets ``[lo, hi)`` whose batches must carry one epoch, around ``offset``."""
        k = bisect_right(self.epoch_starts, offset) - 1
        if k < 0:
            return 0, -1, None
        hi = self.epoch_starts[k + 1] if k + 1 < len(self.epoch_starts) else 1 << 63
        return self.epoch_starts[k], hi, self.epochs[k][0]

    def _flush_epoch_run(self) -> None:
        if self.epoch_run is None:
            return
        (log, k, ple), b, count = self.epoch_run
        self.epoch_run = None
        if k < 0:
            expected = f"an epoch up to {self.epochs[0][0]} (before the first start offset {self.epochs[0][1]})"
        else:
            expected = f"epoch {self.epochs[k][0]} (from offset {self.epochs[k][1]})"
        many = f" (and {count - 1} batches after it)" if count > 1 else ""
        self.r.add(FileKind.leader_epoch_checkpoint, self.epochs_file or "", max(k, 0),
                   f"{expected} in the partition leader epoch of batches",
                   f"batch@{b.position} of {os.path.basename(log)} (offset {b.base_offset}) carries epoch {ple}{many}")

    def _epoch_notes(self, log_end: int | None) -> None:
        for k, (epoch, start) in enumerate(self.epochs):
            if k in self.epoch_seen:
                continue
            if log_end is not None and start > log_end:
                self.r.note("leader epochs starting past the log end offset (the log was truncated; the "
                            "checkpoint is flushed asynchronously)")
            elif log_end is None or start < log_end:
                self.r.note("leader epochs with no batch in the files (deleted, truncated or compacted history)")


def verify(path: str) -> VerifyReport:
    """Verify a partition directory (every file) or one segment (its ``.index``,
    ``.timeindex`` and ``.txnindex``) against the log.

    Raises:
        InputError: unreadable files, no segment.
    """
    report = VerifyReport()
    if os.path.isdir(path):
        segments = list_segments(path)
        snapshots = list_snapshots(path)
        epochs = os.path.join(path, LEADER_EPOCH_FILE)
        _Verifier(segments, snapshots, epochs if os.path.isfile(epochs) else None, report).run()
    else:
        _Verifier([segment_of(path)], [], None, report).run()
    return report


def verify_paths(paths: list[str]) -> VerifyReport:
    """``--verify``: every partition directory or segment in ``paths`` (an index file stands for
    its segment), one report.

    Raises:
        UsageError: an input that is neither (stdin, a snapshot, a checkpoint...), or none.
        InputError: unreadable files.
    """
    from kgtool.errors import UsageError
    from kgtool.inputs import STDIN
    from kgtool.storage.files import file_kind

    targets = []
    for p in paths:
        kind = None if p == STDIN or os.path.isdir(p) else file_kind(p)
        if p == STDIN or kind not in (None, FileKind.segment, FileKind.offset_index, FileKind.time_index,
                                      FileKind.txn_index) or (kind is None and not os.path.isdir(p)):
            raise UsageError(f"--verify takes partition directories and segment files, not {p}")
        targets.append(p if kind in (None, FileKind.segment) else os.path.splitext(p)[0] + ".log")
    if not targets:
        raise UsageError("--verify: give partition directories or segment files")
    total = VerifyReport()
    for t in targets:
        rep = verify(t)
        total.rows.extend(rep.rows)
        total.count += rep.count
        total.notes.update(rep.notes)
        total.checked.update(rep.checked)
    return total
