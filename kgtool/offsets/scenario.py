"""Scenario scripts: a compact way to write a ``__consumer_offsets`` history.

A :class:`Script` is a list of events, each one batch of the coordinator (as the broker
writes them: one batch per OffsetCommit request, one GroupMetadata record per rebalance, one
control batch per transaction marker). The same script becomes

- a stream of :class:`~kgtool.offsets.entries.LogEntry` (:meth:`Script.entries`), to test the
  model without any codec, and
- a real segment file through kgtool's encoders (:mod:`kgtool.offsets.writer`), for the
  end-to-end tests, the shipped sample and the benchmark.

Values use the field names kgtool's coordinator decoder gives (Kafka's names, snake_case).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgtool.offsets.entries import CONTROL, GROUP_METADATA, NO_PRODUCER_ID, OFFSET_COMMIT, LogEntry

Assignment = dict[str, list[tuple[str, int]]]  # member id -> assigned topic partitions


def _by_topic(tps: list[tuple[str, int]]) -> list[dict[str, Any]]:
    topics: dict[str, list[int]] = {}
    for t, p in tps:
        topics.setdefault(t, []).append(p)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(topics.items())]


@dataclass
class ScriptRecord:
    kind: str
    key: dict[str, Any]
    value: dict[str, Any] | None
    value_version: int | None = None


@dataclass
class Event:
    """One batch: records, or a transaction marker (``control``)."""

    timestamp: int
    records: list[ScriptRecord] = field(default_factory=list)
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    transactional: bool = False
    control: str | None = None  # "COMMIT" / "ABORT"
    coordinator_epoch: int = 0
    compression: str = "none"


@dataclass
class Script:
    """A history of one ``__consumer_offsets`` partition, built event by event."""

    log_partition: int = 0
    start_ms: int = 1_717_171_200_000  # 2024-05-31T16:00:00Z
    events: list[Event] = field(default_factory=list)
    clock: int = 0

    def _ts(self, at: int | None) -> int:
        if at is not None:
            self.clock = at
        else:
            self.clock += 1000
        return self.start_ms + self.clock

    # ---- classic group metadata --------------------------------------------------------
    def generation(
        self,
        group: str,
        generation: int,
        assignment: Assignment,
        *,
        protocol: str | None = "range",
        protocol_type: str = "consumer",
        leader: str | None = None,
        topics: list[str] | None = None,
        owned: Assignment | None = None,
        instance_ids: dict[str, str] | None = None,
        at: int | None = None,
        compression: str = "none",
        clients: dict[str, tuple[str, str]] | None = None,
        session_timeout: int = 45000,
        rebalance_timeout: int = 300000,
    ) -> int:
        """A GroupMetadata record (a rebalance completed, or the group became Empty when
        ``assignment`` is empty). Returns the record's timestamp.

        Members' client id and host default to the member id's first "-" field and
        ``/10.0.0.1``; ``clients`` gives them per member id as ``(client_id, client_host)``."""
        ts = self._ts(at)
        members = []
        for mid, tps in assignment.items():
            subscribed = topics if topics is not None else sorted({t for t, _ in tps})
            own = (owned or {}).get(mid, [])
            client_id, client_host = (clients or {}).get(mid, (mid.split("-")[0], "/10.0.0.1"))
            members.append(
                {
                    "member_id": mid,
                    "group_instance_id": (instance_ids or {}).get(mid),
                    "client_id": client_id,
                    "client_host": client_host,
                    "rebalance_timeout": rebalance_timeout,
                    "session_timeout": session_timeout,
                    "subscription_decoded": {
                        "topics": list(subscribed),
                        "user_data": None,
                        "owned_partitions": _by_topic(own),
                        "generation_id": generation - 1 if own else -1,
                        "rack_id": None,
                    },
                    "assignment_decoded": {"assigned_partitions": _by_topic(tps), "user_data": None},
                }
            )
        value = {
            "protocol_type": protocol_type,
            "generation": generation,
            "protocol": protocol if members else None,
            "leader": (leader or (members[0]["member_id"] if members else None)),
            "current_state_timestamp": ts,
            "members": members,
        }
        self.events.append(
            Event(ts, [ScriptRecord(GROUP_METADATA, {"group": group}, value, 3)], compression=compression)
        )
        return ts

    def delete_group(self, group: str, partitions: list[tuple[str, int]], *, at: int | None = None) -> None:
        """DeleteGroups: offset tombstones plus a GroupMetadata tombstone, one batch."""
        ts = self._ts(at)
        recs = [ScriptRecord(OFFSET_COMMIT, {"group": group, "topic": t, "partition": p}, None) for t, p in partitions]
        recs.append(ScriptRecord(GROUP_METADATA, {"group": group}, None))
        self.events.append(Event(ts, recs))

    # ---- offsets -----------------------------------------------------------------------
    def commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        *,
        leader_epoch: int = -1,
        metadata: str = "",
        expire_timestamp: int | None = None,
        producer: tuple[int, int] | None = None,
        at: int | None = None,
        compression: str = "none",
    ) -> int:
        """One OffsetCommit (or TxnOffsetCommit with ``producer=(id, epoch)``) request."""
        ts = self._ts(at)
        recs = []
        for (t, p), off in offsets.items():
            v: dict[str, Any] = {
                "offset": off,
                "leader_epoch": leader_epoch,
                "metadata": metadata,
                "commit_timestamp": ts,
            }
            version = 3
            if expire_timestamp is not None:
                # OffsetCommitValue v1 has an expire timestamp and no leader epoch.
                v = {"offset": off, "metadata": metadata, "commit_timestamp": ts, "expire_timestamp": expire_timestamp}
                version = 1
            recs.append(ScriptRecord(OFFSET_COMMIT, {"group": group, "topic": t, "partition": p}, v, version))
        pid, pe = producer if producer is not None else (NO_PRODUCER_ID, -1)
        self.events.append(
            Event(ts, recs, producer_id=pid, producer_epoch=pe, transactional=producer is not None, compression=compression)
        )
        return ts

    def delete_offsets(self, group: str, partitions: list[tuple[str, int]], *, at: int | None = None) -> None:
        """OffsetDelete: offset tombstones."""
        ts = self._ts(at)
        recs = [ScriptRecord(OFFSET_COMMIT, {"group": group, "topic": t, "partition": p}, None) for t, p in partitions]
        self.events.append(Event(ts, recs))

    def marker(self, producer: tuple[int, int], result: str, *, coordinator_epoch: int = 0, at: int | None = None) -> None:
        """A transaction marker (control batch) ending ``producer``'s transaction."""
        ts = self._ts(at)
        self.events.append(
            Event(ts, [], producer_id=producer[0], producer_epoch=producer[1], transactional=True,
                  control=result, coordinator_epoch=coordinator_epoch)
        )

    # ---- KIP-848 -----------------------------------------------------------------------
    def raw(self, kind: str, key: dict[str, Any], value: dict[str, Any] | None, *, value_version: int | None = 0,
            at: int | None = None) -> None:
        """Any coordinator record, as its own batch (KIP-848 records, ...)."""
        ts = self._ts(at)
        self.events.append(Event(ts, [ScriptRecord(kind, key, value, value_version)]))

    def batch(self, records: list[tuple[str, dict[str, Any], dict[str, Any] | None]], *,
              at: int | None = None) -> None:
        """Records of one coordinator write (a heartbeat's, a timer's) as one batch:
        ``(kind, key, value)`` each, value None for a tombstone."""
        ts = self._ts(at)
        self.events.append(Event(ts, [ScriptRecord(k, key, v, None if v is None else 0) for k, key, v in records]))

    # ---- views -------------------------------------------------------------------------
    def entries(self, source: str = "<script>") -> list[LogEntry]:
        """The script as the decoder would see it (positions are event indexes x 1000)."""
        out: list[LogEntry] = []
        offset = 0
        for i, ev in enumerate(self.events):
            common = dict(
                log_partition=self.log_partition,
                position=i * 1000,
                source=source,
                timestamp=ev.timestamp,
                producer_id=ev.producer_id,
                producer_epoch=ev.producer_epoch,
                is_transactional=ev.transactional,
                is_control=ev.control is not None,
            )
            if ev.control is not None:
                out.append(LogEntry(offset=offset, kind=CONTROL, control_type=ev.control,
                                    coordinator_epoch=ev.coordinator_epoch, **common))
                offset += 1
                continue
            for r in ev.records:
                out.append(LogEntry(offset=offset, kind=r.kind, group=r.key.get("group", r.key.get("group_id")), key=dict(r.key),
                                    value=r.value, value_version=None if r.value is None else r.value_version,
                                    **common))
                offset += 1
        return out

    def offset_of(self, event_index: int) -> int:
        """Base offset of an event's batch."""
        n = 0
        for ev in self.events[:event_index]:
            n += 1 if ev.control is not None else len(ev.records)
        return n
