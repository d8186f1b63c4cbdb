"""Rebalances: one row per change of a group's generation, and the ``rebalance-storm`` rule.

A classic group changes generation with a ``GroupMetadata`` record that carries a new generation
id (``ClassicGroup.initNextGeneration``, stored by ``GroupMetadataManager`` when a rebalance
completes or the group becomes Empty); a KIP-848 group with a ``ConsumerGroupMetadata`` record
that bumps the group epoch. Each change becomes a row of the ``rebalances`` table, comparing the
generation with the one before it:

- members that **joined** and **left**; members that **rejoined**: the same client id and host
  back with a new member id (a restart, or an expulsion: a dynamic member that exceeds
  ``max.poll.interval.ms`` leaves the group and rejoins with a new member id,
  ``AbstractCoordinator.maybeLeaveGroup`` / ``resetStateAndGeneration``); a departure is
  remembered, so a member that left in one rebalance and came back in a later one is a rejoin;
- **static** members (KIP-345, ``group.instance.id``) whose member id was replaced: the
  coordinator gives a static member that rejoins a new member id and keeps its assignment
  (``ClassicGroup.replaceStaticMember``); while the group is Stable this rewrites the metadata
  with the **same generation**: no rebalance. Such a record is a row with ``rebalance`` false
  (not left out), so that the restart is seen;
- the rebalance protocol from the assignor (``ConsumerPartitionAssignor.supportedProtocols``):
  ``range``, ``roundrobin``, ``sticky`` are eager, ``cooperative-sticky`` is cooperative
  (KIP-429), KIP-848 groups are cooperative (incremental by design); others are unknown;
- partitions **moved**: given to other owners than they last had (a move as the zombie rule
  sees it; a partition assigned for the first time, or left unassigned, is not moved), and
  **revoked**: under eager every member revokes every partition it owns before it rejoins
  (``ConsumerCoordinator.onJoinPrepare``), so all partitions owned in the previous generation;
  under cooperative (KIP-429) only the partitions leaving their owner (to another member, or to
  none until the follow-up rebalance);
- the members' recorded ``session.timeout.ms`` and rebalance timeout (``max.poll.interval.ms``);
- a cause code and a sentence.

A KIP-848 group's assignment converges after its epoch bump (``ConsumerGroupCurrentMemberAssignment``
records), so a row is completed when the group's next change (or the end of the log) closes it:
partitions moved are the moves made while the epoch was in effect, revoked compares the owners
before the change with the owners the group reached under it. Work here is per generation
record, never per commit (measured on a log with a generation record every 470 commits: about
4% of the audit's instructions, 5% of its CPU time).

``rebalance-storm``: at least N rebalances within any window shorter than W (``--storm N/W``,
default 5/10m). A rebalance here is a row with ``rebalance`` true and a previous generation: the
group's creation stops no consumer and is not counted, nor is a KIP-848 epoch whose change a later
epoch's target assignment served (Kafka 4.3's batching: ``target_epoch`` above ``to_generation``;
its members count with that epoch's). Overlapping windows make one storm,
reported once with its window, its count, the members that churned most (client id and host)
and a diagnosis.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from kgtool.offsets.reconciliation import NO_PROGRESS
from kgtool.offsets.tables import group_finding

if TYPE_CHECKING:  # pragma: no cover
    from kgtool.offsets.entries import LogEntry
    from kgtool.offsets.generations import Generation

STORM_RULE = "rebalance-storm"

# ConsumerPartitionAssignor.supportedProtocols(): RangeAssignor, RoundRobinAssignor and
# StickyAssignor support EAGER only; CooperativeStickyAssignor COOPERATIVE (KIP-429);
# Kafka Streams' StreamsPartitionAssignor ("stream") COOPERATIVE since 2.4.
EAGER_ASSIGNORS = frozenset({"range", "roundrobin", "sticky"})
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky", "stream"})
_KIND = {**dict.fromkeys(EAGER_ASSIGNORS, "eager"), **dict.fromkeys(COOPERATIVE_ASSIGNORS, "cooperative")}
#: session.timeout.ms default since Kafka 3.0 (KIP-735 raised it from 10 s: shorter timeouts
#: expel members on GC pauses and network blips). Storms of expulsions below it are flagged.
DEFAULT_SESSION_TIMEOUT_MS = 45_000
DEPARTED_CAP = 64  # departed clients remembered per group (rejoin detection), oldest dropped ...
DEPARTED_IDS = 4  # ... and member ids per client
CHURN_CAP = 1024  # distinct clients counted per storm; the rest are counted as others
FOLD_EVERY = 256  # rebalances a storm holds before counting them
SHOWN_NAMES = 3  # members named in a sentence

class MemberInfo(NamedTuple):
    """What the rebalances table compares of a member from one generation to the next: a
    consumer group member's snapshot (``ConsumerGroupMember`` changes in place as its records
    come); a classic generation's members are the shard's ``ClassicGroupMember`` objects, which
    have the same attributes (a GroupMetadata record replaces them whole)."""

    instance_id: str | None  # group.instance.id
    client_id: str | None
    client_host: str | None
    session_timeout_ms: int | None  # session.timeout.ms
    rebalance_timeout_ms: int | None  # max.poll.interval.ms


#: member id -> its MemberInfo (or ClassicGroupMember)
Members = Mapping[str, Any]
_SESSION, _REBALANCE = attrgetter("session_timeout_ms"), attrgetter("rebalance_timeout_ms")


_NO_IDS: list[str] = []  # shared by rows (read-only): the writer converts it once
_NO_MEMBERS: Members = {}  # read-only
_NO_OWNERS: dict = {}  # read-only
_NO_RENAMES: dict[str, str] = {}  # read-only


def rebalance_protocol(protocol: str, protocol_type: str | None, protocol_name: str | None) -> str | None:
    """``eager`` / ``cooperative`` / None (unknown) for a generation's protocol and assignor."""
    if protocol == "consumer":
        return "cooperative"  # KIP-848: members give up only the partitions that move
    if protocol_type is not None and protocol_type != "consumer":
        return None  # connect, custom protocols: their assignments are opaque
    return _KIND.get(protocol_name)  # type: ignore[arg-type]


def client_name(client_id: str | None, host: str | None) -> str:
    """``client@host`` as sentences show it (Kafka records the host as ``/10.0.0.1``)."""
    h = (host or "").lstrip("/")
    return f"{client_id or '?'}@{h or '?'}"


def _names(items: list[str], limit: int = SHOWN_NAMES) -> str:
    if len(items) <= limit:
        return ", ".join(items)
    return ", ".join(items[:limit]) + f" and {len(items) - limit} more"


def _min(values: Any) -> int | None:
    """The smallest recorded value (None and negative ones, i.e. not recorded, skipped)."""
    best = None
    for v in values:
        if v is not None and v >= 0 and (best is None or v < best):
            best = v
    return best


def _timeouts(infos: Members) -> tuple[int | None, int | None]:
    """The smallest recorded session timeout and rebalance timeout among members (members of a
    group mostly share them: the distinct values are few)."""
    members = infos.values()
    sessions, rebalances = set(map(_SESSION, members)), set(map(_REBALANCE, members))
    if len(sessions) == 1 and len(rebalances) == 1:  # the usual case: one configuration
        (s,), (r,) = sessions, rebalances
        return (s if s is not None and s >= 0 else None), (r if r is not None and r >= 0 else None)
    return _min(sessions), _min(rebalances)


class Churn(NamedTuple):
    """A member that joined, left, rejoined (same client, new member id) or was replaced (static)
    in a rebalance, as the storm rule counts it."""

    kind: str  # "joined" / "left" / "rejoined" / "static"
    client_id: str | None
    client_host: str | None
    instance_id: str | None
    rebalance_timeout_ms: int | None


class Change(NamedTuple):
    """A rebalance as the storm rule keeps it (one per generation record, and a group keeps its
    last N: no row, no lists, no sentence)."""

    index: int  # its rank among the group's rebalances
    timestamp: int
    record_offset: int = 0
    position: int = 0
    source: str = ""
    from_generation: int | None = None
    to_generation: int = 0
    cause: str = ""
    protocol_name: str | None = None  # the assignor
    rebalance_protocol: str | None = None  # eager / cooperative
    revoked: int | None = None
    moved: int | None = None
    session_timeout_ms: int | None = None
    churn: tuple[Churn, ...] = ()


class GenerationChange(NamedTuple):
    """A generation record compared with the generation before it: what its rebalances row is
    made of (a KIP-848 change waits for its reconciliation before the row is made)."""

    prev: Generation | None
    gen: Generation
    timestamp: int
    record_offset: int
    position: int
    source: str
    rebalance: bool
    seconds: float | None
    joined: list[str]
    left: list[str]
    rejoined: list[str]
    static: list[str]
    renamed: dict[str, str]
    cause: str
    sentence: str
    churn: tuple[Churn, ...]
    proto_name: str | None
    kind: str | None


class Storm:
    """One storm episode: overlapping windows of at least N rebalances within W."""

    def __init__(self, group: str, log_partition: int) -> None:
        self.group = group
        self.log_partition = log_partition
        self.first: Change | None = None
        self.last: Change | None = None
        self.count = 0
        self.churn: Counter = Counter()  # (client_id, host) -> changes it took part in
        self.others = 0  # churn past CHURN_CAP distinct clients
        self.rejoins: Counter = Counter()  # dynamic (client_id, host) -> rejoins
        self.rejoin_timeouts: dict[tuple, int] = {}
        self.static: Counter = Counter()
        self.joins = self.leaves = 0
        self.eager = 0
        self.assignors: dict[str, int] = {}
        self.revoked = self.moved = 0
        self.session_min: int | None = None  # smallest recorded session.timeout.ms
        self.expulsions = 0  # left or rejoined members (possible session / poll timeouts)
        self.causes: dict[str, int] = {}
        self.added: list[Change] = []  # not yet counted: added in bulk (bounded: FOLD_EVERY)
        self.evidence: list[tuple[int, int, int, str]] = []  # (record offset, timestamp, position, source)

    def add(self, c: Change) -> None:
        """Take a rebalance of the storm: kept, and counted with the next ones in bulk (one
        append per generation record)."""
        added = self.added
        added.append(c)
        if len(added) >= FOLD_EVERY:
            self.fold()

    def fold(self) -> None:
        """Count the rebalances added since the last fold."""
        added, self.added = self.added, []
        for c in added:
            self._count(c)

    def _count(self, c: Change) -> None:
        if self.first is None:
            self.first = c
        self.last = c
        self.count += 1
        self.evidence.append((c.record_offset, c.timestamp, c.position, c.source))
        causes, cause = self.causes, c.cause
        causes[cause] = causes.get(cause, 0) + 1
        assignor = c.protocol_name
        if assignor is not None:
            assignors = self.assignors
            assignors[assignor] = assignors.get(assignor, 0) + 1
            if c.rebalance_protocol == "eager":
                self.eager += 1
                self.revoked += c.revoked or 0
                self.moved += c.moved or 0
        session = c.session_timeout_ms
        if session is not None and (self.session_min is None or session < self.session_min):
            self.session_min = session
        churn = c.churn
        if not churn:
            return
        for ch in churn:
            kind, key, rto = ch.kind, (ch.client_id, ch.client_host), ch.rebalance_timeout_ms
            if key in self.churn or len(self.churn) < CHURN_CAP:
                self.churn[key] += 1
            else:
                self.others += 1
            if kind == "joined":
                self.joins += 1
            elif kind == "left":
                self.leaves += 1
                self.expulsions += 1
            elif kind == "rejoined":
                self.expulsions += 1
                if key in self.rejoins or len(self.rejoins) < CHURN_CAP:
                    self.rejoins[key] += 1
                    if rto is not None:
                        self.rejoin_timeouts[key] = rto
            elif kind == "static":
                self.static[ch.instance_id] += 1

    # ---- the finding ---------------------------------------------------------------------
    def top_churn(self) -> list[dict[str, Any]]:
        return [{"client_id": cid, "client_host": host, "count": n}
                for (cid, host), n in sorted(self.churn.items(), key=lambda kv: (-kv[1], str(kv[0])))[:SHOWN_NAMES]]

    def diagnosis(self) -> list[dict[str, str]]:
        """The cases of the issue, each with its recommendation; at least one."""
        out = []
        loops = sorted(((k, n) for k, n in self.rejoins.items() if n >= 2), key=lambda kn: (-kn[1], str(kn[0])))
        if loops:
            names = [f"{client_name(*k)} ({n} times)" for k, n in loops]
            rto = [self.rejoin_timeouts[k] for k, _n in loops if k in self.rejoin_timeouts]
            poll = f" (recorded: {min(rto)} ms)" if rto else ""
            out.append({"code": "rejoin-loop", "text": (
                f"the same dynamic client keeps rejoining with a new member id: {_names(names)}; a consumer "
                f"whose processing between two poll() calls exceeds max.poll.interval.ms{poll} is expelled "
                "and rejoins: measure its processing time per poll against max.poll.interval.ms (lower "
                "max.poll.records or raise max.poll.interval.ms), and give it a group.instance.id (static "
                "membership, KIP-345) so that a restart keeps its member id")})
        once = sorted(k for k, n in self.rejoins.items() if n == 1)
        if len(once) >= 2:
            out.append({"code": "rolling-restart", "text": (
                f"a rolling restart of dynamic members: {len(once)} clients came back once each with a new "
                f"member id ({_names([client_name(*k) for k in once])}), each restart costing a rebalance: use "
                "static membership (group.instance.id, KIP-345) with a session.timeout.ms longer than a "
                "restart, so that a restarted instance gets its partitions back without a rebalance")})
        if self.eager:
            assignor = _names(sorted(self.assignors, key=lambda a: -self.assignors[a])) or "eager"
            out.append({"code": "eager-assignor", "text": (
                f"eager assignor {assignor}: each of its {self.eager} rebalance(s) revoked every owned "
                f"partition, {self.revoked} partition revocations in all, of which {self.moved} went to "
                "another member: cooperative-sticky (KIP-429) revokes only the partitions that move and "
                "sticky assignment moves few (switch by listing cooperative-sticky first next to the current "
                "assignor, one rolling restart, then drop the old one)")})
        fenced = self.causes.get("member-fenced", 0)
        if fenced:
            out.append({"code": "fenced-members", "text": (
                f"{fenced} rebalance(s) followed a member fenced by its rebalance timeout (KIP-848): it kept "
                "partitions pending revocation past max.poll.interval.ms (see the slow-revocation findings): "
                "make onPartitionsRevoked fast (commit asynchronously, no blocking I/O) or raise "
                "max.poll.interval.ms")})
        short = self.session_min
        if self.expulsions and short is not None and short < DEFAULT_SESSION_TIMEOUT_MS:
            out.append({"code": "short-session-timeout", "text": (
                f"recorded session.timeout.ms as low as {short} ms, below Kafka's default of "
                f"{DEFAULT_SESSION_TIMEOUT_MS} ms (KIP-735), with {self.expulsions} member(s) leaving or "
                "rejoining: a GC pause or a network blip longer than that expels a member; raise "
                "session.timeout.ms (heartbeat.interval.ms at most a third of it)")})
        if not out:
            if self.joins or self.leaves or self.static:
                text = (f"membership kept changing ({self.joins} join(s), {self.leaves} departure(s) of "
                        "different members): look for an autoscaler that flaps or instances that crash and are "
                        "replaced (new hosts), and at the members named above")
            else:
                top = ", ".join(f"{c} {n}" for c, n in Counter(self.causes).most_common())
                text = (f"rebalances without membership changes ({top}): a member asked to rejoin, e.g. its "
                        "subscription or the topic metadata changed (a pattern subscription matching new "
                        "topics, partitions added); check what the members changed at these times")
            out.append({"code": "membership-churn" if (self.joins or self.leaves or self.static) else
                        "no-membership-change", "text": text})
        return out

    def to_dict(self, count: int, window_ms: int) -> dict[str, Any]:
        """The storm as the summary carries it (and the finding words it)."""
        self.fold()
        first, last = self.first, self.last
        assert first is not None and last is not None
        churn = self.top_churn()
        diag = self.diagnosis()
        span = (last.timestamp - first.timestamp) / 1000
        who = ", ".join(f"{client_name(c['client_id'], c['client_host'])} ({c['count']})" for c in churn)
        message = (
            f"{self.count} rebalances in {span:.0f} s (threshold: {count} within {window_ms / 1000:.0f} s), "
            f"generation {first.from_generation if first.from_generation is not None else '-'} -> {last.to_generation}"
            + (f"; churned most: {who}" if who else "")
            + "; " + "; ".join(d["text"] for d in diag)
        )
        return {
            "group": self.group,
            "log_partition": self.log_partition,
            "start": first.timestamp,
            "end": last.timestamp,
            "count": self.count,
            "from_generation": first.from_generation,
            "to_generation": last.to_generation,
            "record_offset": first.record_offset,
            "position": first.position,
            "source": first.source,
            "churn": churn,
            "diagnosis": diag,
            "message": message,
        }


def storm_finding(s: dict[str, Any]) -> dict[str, Any]:
    """The findings-table row of a storm (a group-level finding: no topic partition, offset)."""
    return group_finding(STORM_RULE, s["group"], s["log_partition"], record_offset=s["record_offset"],
                         position=s["position"], source=s["source"], timestamp=s["start"],
                         generation_id=s["to_generation"], previous_generation_id=s["from_generation"],
                         message=s["message"])


class StormWatch:
    """The storm rule over one group's rebalances, in log order (bounded: the last N)."""

    def __init__(self, group: str, log_partition: int, count: int, window_ms: int) -> None:
        self.group, self.log_partition = group, log_partition
        self.count, self.window_ms = count, window_ms
        self.recent: deque[Change] = deque(maxlen=count)
        self.episode: Storm | None = None
        self.last_index = -1  # index of the episode's last change

    def add(self, c: Change) -> Storm | None:
        """Take a rebalance; returns a storm that can no longer grow (else None)."""
        recent = self.recent
        recent.append(c)
        if len(recent) < self.count or c.timestamp - recent[0].timestamp >= self.window_ms:
            return None
        done = None
        ep = self.episode
        last = self.last_index
        if ep is not None and recent[0].index <= last:
            # the window overlaps the storm: it grows by the window's rebalances after its last
            if recent[-2].index <= last:
                ep.add(c)  # the usual case: only this one
            else:
                for x in recent:
                    if x.index > last:
                        ep.add(x)
        else:
            done = ep
            if done is not None:
                done.fold()
            ep = self.episode = Storm(self.group, self.log_partition)
            for x in recent:
                ep.add(x)
        self.last_index = c.index
        return done

    def finish(self) -> Storm | None:
        ep, self.episode = self.episode, None
        if ep is not None:
            ep.fold()
        return ep


class GroupRebalances:
    """One group's generation changes: rows of the ``rebalances`` table and its storm rule."""

    def __init__(self, log: RebalanceLog, group: str) -> None:
        self.log = log
        self.log_partition = log.log_partition
        self.group = group
        self.pending: GenerationChange | None = None  # a KIP-848 change, until closed
        self.batched: list[GenerationChange] = []  # closed KIP-848 changes waiting for the target that serves them
        self.carried: tuple[Churn, ...] = ()  # the churn of batched changes, counted with the one that served them
        self.last_change: int | None = None  # timestamp of the last rebalance
        self.deleted = False  # a group tombstone came since the last generation
        self.index = 0
        self.last_revoked: int | None = None  # by the last rebalance, if cooperative
        self.last_infos: Members | None = None  # the last row's members and their timeouts
        self.last_timeouts: tuple[int | None, int | None] = (None, None)
        # departed members, remembered to recognize a rejoin in a later rebalance
        self.departed: dict[tuple[str | None, str | None], list[str]] = {}  # (client id, host) -> member ids
        self.departed_static: dict[str, list[str]] = {}  # group.instance.id -> member ids
        self.storm = StormWatch(group, log.log_partition, log.storm_count, log.storm_window_ms)
        self.first_row: int | None = None  # record offset of the group's first row (its first record read)

    # ---- events from GroupState --------------------------------------------------------------
    def change(self, prev: Generation | None, gen: Generation, e: LogEntry) -> None:
        """A generation record: close the pending change; this one's row is made now (classic:
        its assignment is in the record) or when the group's next change closes it (KIP-848)."""
        if self.pending is not None:
            self.close()
        before = _NO_MEMBERS if prev is None or prev.member_info is None else prev.member_info
        after = _NO_MEMBERS if gen.member_info is None else gen.member_info
        rebalance = prev is None or prev.generation_id != gen.generation_id or prev.protocol != gen.protocol
        if before.keys() == after.keys():
            joined = left = rejoined = static = _NO_IDS
            renamed = _NO_RENAMES
            churn: tuple = ()
        else:
            joined, left, rejoined, static, renamed, churn = self._diff(before, after)
        ts = e.timestamp
        seconds = None if self.last_change is None else (ts - self.last_change) / 1000
        proto_name, proto_type = gen.protocol_name, gen.protocol_type
        if proto_name is None and prev is not None:  # an Empty generation: the assignor that was
            proto_name, proto_type = prev.protocol_name, prev.protocol_type
        kind = "cooperative" if gen.protocol == "consumer" else \
            _KIND.get(proto_name) if proto_type is None or proto_type == "consumer" else None  # rebalance_protocol()
        cause, sentence = self._cause(prev, gen, rebalance, before, after, joined, left, rejoined, static, renamed,
                                      kind)
        if rebalance:
            self.last_change = ts
        self.deleted = False
        if gen.protocol == "consumer":
            self.pending = GenerationChange(prev, gen, ts, e.offset, e.position, e.source, rebalance, seconds, joined,
                                            left, rejoined, static, renamed, cause, sentence, churn, proto_name, kind)
        else:
            self._row(GenerationChange(prev, gen, ts, e.offset, e.position, e.source, rebalance, seconds, joined, left,
                                       rejoined, static, renamed, cause, sentence, churn, proto_name, kind))

    def tombstone(self) -> None:
        """A group tombstone: the group is gone; a later generation starts a new one."""
        self.close(final=True)
        self.deleted = True
        self.last_change = None  # the next generation starts a new group: no previous rebalance
        self.departed.clear()
        self.departed_static.clear()

    def finish(self) -> None:
        self.close(final=True)
        storm = self.storm.finish()
        if storm is not None:
            self.log.storm(storm, self.first_row)

    # ---- diff ---------------------------------------------------------------------------------
    def _diff(self, before: Members, after: Members) -> tuple:
        removed = [m for m in before if m not in after]
        added = [m for m in after if m not in before]
        joined, left, rejoined, static = [], [], [], []
        renamed: dict[str, str] = {}
        churn = []
        by_instance = {before[m].instance_id: m for m in removed if before[m].instance_id is not None}
        by_client: dict[tuple, list[str]] = {}
        for m in removed:
            if before[m].instance_id is None:
                by_client.setdefault((before[m].client_id, before[m].client_host), []).append(m)
        gone = set(removed)
        for m in added:
            info = after[m]
            inst = info.instance_id
            key = (info.client_id, info.client_host)
            if inst is not None and (inst in by_instance or self._back(self.departed_static, inst, m)):
                # KIP-345: a static member back with a new member id, group.instance.id kept
                old = by_instance.pop(inst, None)
                if old is not None:
                    gone.discard(old)
                    renamed[old] = m
                static.append(inst)
                churn.append(Churn("static", info.client_id, info.client_host, inst, info.rebalance_timeout_ms))
            elif inst is None and info.client_id is not None and (by_client.get(key)
                                                                  or self._back(self.departed, key, m)):
                # the same client id and host with a new member id: a restart or an expulsion
                olds = by_client.get(key)
                if olds:
                    gone.discard(olds.pop())
                rejoined.append(m)
                churn.append(Churn("rejoined", info.client_id, info.client_host, None, info.rebalance_timeout_ms))
            else:
                joined.append(m)
                churn.append(Churn("joined", info.client_id, info.client_host, inst, info.rebalance_timeout_ms))
        for m in removed:
            if m not in gone:
                continue
            info = before[m]
            left.append(m)
            churn.append(Churn("left", info.client_id, info.client_host, info.instance_id, info.rebalance_timeout_ms))
            if info.instance_id is not None:
                self._remember(self.departed_static, info.instance_id, m)
            elif info.client_id is not None:
                self._remember(self.departed, (info.client_id, info.client_host), m)
        return (sorted(joined) or _NO_IDS, sorted(left) or _NO_IDS, sorted(rejoined) or _NO_IDS,
                sorted(static) or _NO_IDS, renamed, tuple(churn))

    @staticmethod
    def _remember(d: dict, key: Any, member_id: str) -> None:
        ids = d.pop(key, [])
        ids.append(member_id)
        d[key] = ids[-DEPARTED_IDS:]  # most recent last
        if len(d) > DEPARTED_CAP:
            del d[next(iter(d))]

    @staticmethod
    def _back(d: dict, key: Any, member_id: str) -> bool:
        """A member that left earlier comes back under ``member_id``: a different one (a member
        id is never reused by the coordinator: the same id again is not a restart)."""
        ids = d.get(key)
        if not ids:
            return False
        for i, old in enumerate(ids):
            if old != member_id:
                del ids[i]
                if not ids:
                    del d[key]
                return True
        return False

    # ---- cause ----------------------------------------------------------------------------------
    def _cause(self, prev: Generation | None, gen: Generation, rebalance: bool, before: Members,
               after: Members, joined: list[str], left: list[str], rejoined: list[str],
               static: list[str], renamed: dict[str, str], kind: str | None) -> tuple[str, str]:
        who = _who
        if not rebalance:
            if static:
                pairs = [f"{after[new].instance_id} ({old} -> {new})" for old, new in renamed.items()] or static
                return "static-member-replaced", (
                    f"static member {_names(pairs)} rejoined with a new member id and kept its assignment: "
                    "same generation, no rebalance (KIP-345)")
            return "same-generation", "metadata rewritten with the same generation: no rebalance"
        if prev is None:
            n = len(after)
            if self.deleted:
                return "first-generation", f"group created again after its deletion, {n} member(s)"
            # a new group's first generation: classic 1 (ClassicGroup.initNextGeneration); KIP-848
            # epoch 1 before 4.3, 2 from 4.3 (NEW_GROUP_EPOCH 1, then the first member's bump)
            first = gen.generation_id <= (1 if gen.protocol == "classic" else 2)
            if first:
                return "first-generation", f"group created: {n} member(s) joined" + (
                    f" ({who(sorted(after), after)})" if n else "")
            return "first-generation", (
                f"first generation record of the group in the log (generation {gen.generation_id}, "
                f"{n} member(s)): the earlier ones are not in it (before the log's start, or compacted away)")
        gap = ""
        if gen.protocol == prev.protocol and gen.generation_id > prev.generation_id + 1:
            gap = (f" (generations {prev.generation_id + 1}..{gen.generation_id - 1} are not in the log: "
                   "compacted away)")
        elif gen.protocol == prev.protocol and gen.generation_id < prev.generation_id:
            gap = f" (the generation went back from {prev.generation_id}: the group was re-created)"
        if not after:
            return "group-emptied", f"the last member(s) left ({who(sorted(before), before)}): the group is Empty" + gap
        fenced = [m for m in left if m in gen.fenced] if gen.protocol == "consumer" else _NO_IDS
        if fenced:
            timeouts = sorted({gen.fenced[m] for m in fenced})
            return "member-fenced", (
                f"{who(fenced, before)} fenced by the coordinator: partitions pending revocation for its whole "
                f"rebalance timeout ({', '.join(map(str, timeouts))} ms; see slow-revocation)"
                + _also(joined, [m for m in left if m not in gen.fenced], after, before) + gap)
        if rejoined:
            infos = [after[m] for m in rejoined]
            rto = _min(i.rebalance_timeout_ms for i in infos)
            sto = _min(i.session_timeout_ms for i in infos)
            limits = " or ".join(x for x in (
                None if rto is None else f"max.poll.interval.ms ({rto} ms)",
                None if sto is None else f"session.timeout.ms ({sto} ms)") if x) or "its timeouts"
            return "member-rejoined", (
                f"{who(rejoined, after)} came back with a new member id (same client id and host): a restart, "
                f"or an expulsion after exceeding {limits}" + _also(joined, left, after, before) + gap)
        if static:
            return "static-member-replaced", (
                f"static member {_names(static)} came back with a new member id (group.instance.id kept), with a "
                "rebalance: it was gone longer than session.timeout.ms, or its subscription changed (KIP-345)"
                + _also(joined, left, after, before) + gap)
        if left and gen.protocol == "consumer":
            return "member-left", (
                f"{who(left, before)} left: a leave heartbeat (member epoch -1), or fenced after "
                "group.consumer.session.timeout.ms without a heartbeat (the coordinator writes the same records)"
                + (f"; {who(joined, after)} joined" if joined else "") + gap)
        if left:
            s_to, r_to = _timeouts(after or before)
            limits = ", ".join(x for x in (
                None if s_to is None else f"session.timeout.ms {s_to} ms",
                None if r_to is None else f"max.poll.interval.ms {r_to} ms") if x)
            return "member-left", (
                f"{who(left, before)} left: a shutdown (LeaveGroup), or expelled without heartbeat or poll "
                f"within its timeouts" + (f" ({limits})" if limits else "")
                + (f"; {who(joined, after)} joined" if joined else "") + gap)
        if joined:
            return "member-joined", f"{who(joined, after)} joined" + gap
        if gen.protocol == "consumer" and "subscription" in gen.changes:
            return "subscription-changed", (
                "same members, a member changed its subscription (topic names or regular expression): new "
                "target assignment (KIP-848)" + gap)
        if gen.protocol == "consumer" and "metadata" in gen.changes:
            return "metadata-changed", (
                "same members, the subscribed topics' metadata changed (partitions added, a topic created or "
                "deleted): new target assignment (KIP-848)" + gap)
        if gen.protocol == "consumer":
            return "kip848-epoch-bump", (
                "group epoch bumped with the same members: a subscription, regular expression or topic "
                "metadata change (KIP-848)" + gap)
        if kind == "cooperative" and self.last_revoked:
            return "cooperative-follow-up", (
                "same members: the follow-up rebalance of the cooperative protocol, which assigns the "
                "partitions revoked in the previous one (KIP-429)" + gap)
        if gen.leader != prev.leader:
            return "leader-change", (
                f"same members, new leader {gen.leader}: a rebalance without membership change (a member "
                "rejoined, e.g. after a subscription or topic metadata change)" + gap)
        return "assignment-only", (
            "same members and leader: a rebalance without membership change (a member asked to rejoin, "
            "e.g. its subscription or the topic metadata changed: partitions added, a pattern matching a "
            "new topic)" + gap)

    # ---- the row ------------------------------------------------------------------------------
    def close(self, final: bool = False) -> None:
        """Complete the pending (KIP-848) change: its row, and the storm rule. A change no target
        assignment has served yet waits for the one that will (Kafka 4.3's batching), unless
        ``final`` (the group is gone or the read ends)."""
        p, self.pending = self.pending, None
        if p is not None:
            progress = p.gen.progress
            if progress is not None and progress.target_epoch is None and not final:
                self.batched.append(p)
                return
        waiting, self.batched = self.batched, []
        for q in waiting:
            self._row(q)
        if p is not None:
            self._row(p)

    def _row(self, change: GenerationChange) -> None:
        """The change's row (partitions moved and revoked as the generation left them), and the
        storm rule."""
        (prev, gen, ts, record_offset, position, source, rebalance, seconds, joined, left, rejoined, static,
         renamed, cause, sentence, churn, proto_name, kind) = change
        moved = revoked = None
        before = _NO_OWNERS if prev is None else prev.owners
        after = gen.owners
        if before is not None and after is not None:
            if renamed:  # a static member's new member id is not a move (KIP-345: it keeps its assignment)
                before = {tp: tuple(sorted(renamed.get(m, m) for m in o)) for tp, o in before.items()}
                moved = sum(1 for tp, o in after.items() if before.get(tp, o) != o)
            else:
                moved = gen.moved
            if not rebalance:
                revoked = 0
            elif kind == "eager":
                revoked = len(before)  # ConsumerCoordinator.onJoinPrepare revokes everything owned
            elif kind == "cooperative":
                # KIP-429: only the partitions leaving their owner (to another, or to none yet);
                # a set operation in C (this runs for every generation record)
                revoked = len(before.items() - after.items()) if before != after else 0
        infos = gen.member_info or (prev.member_info if prev is not None else None) or _NO_MEMBERS
        if infos == self.last_infos:  # the same members as the last row: the same timeouts
            session, rebalance_to = self.last_timeouts
        else:
            session, rebalance_to = self.last_timeouts = _timeouts(infos)
            self.last_infos = infos
        if rebalance and revoked:
            sentence += f"; {proto_name or kind} ({kind}): {revoked} partition(s) revoked, {moved} changed owner"
        progress = gen.progress
        batched = progress is not None and progress.batched
        if batched:
            sentence += (
                f"; no target assignment was computed at this epoch: epoch {progress.target_epoch}'s served its "  # type: ignore[union-attr]
                "change (the coordinator computes one on a heartbeat, not on a departure, and from Kafka 4.3 at "
                "most once per group.consumer.assignment.interval.ms, default 1 s): batched, not an unfinished "
                "rebalance")
        from_gen = None if prev is None else prev.generation_id
        row = {
            "group": self.group,
            "log_partition": self.log_partition,
            "protocol": gen.protocol,
            "from_generation": from_gen,
            "to_generation": gen.generation_id,
            "rebalance": rebalance,
            "record_offset": record_offset,
            "position": position,
            "source": source,
            "timestamp": ts,
            "seconds_since_previous": seconds,
            "members_before": 0 if prev is None or prev.member_info is None else len(prev.member_info),
            "members_after": 0 if gen.member_info is None else len(gen.member_info),
            "joined": joined,
            "left": left,
            "rejoined": rejoined,
            "static_replaced": static,
            "protocol_name": proto_name,
            "rebalance_protocol": kind,
            "partitions_moved": moved,
            "partitions_revoked": revoked,
            "session_timeout_ms": session,
            "rebalance_timeout_ms": rebalance_to,
            **(gen.progress.columns() if gen.progress is not None else {**NO_PROGRESS, "completed_at": ts}),
            "cause": cause,
            "message": sentence,
        }
        self.log.rows.append(row)
        if self.first_row is None:
            self.first_row = record_offset
        if not rebalance:
            return
        self.last_revoked = revoked if kind == "cooperative" else None
        if from_gen is None:
            return  # the group's creation (or first record seen) interrupted no consumer: not counted
        if batched:  # counted with the epoch whose target served it: one reconciliation for the members
            self.carried += churn
            return
        if self.carried:
            churn, self.carried = self.carried + churn, ()
        self.index += 1
        storm = self.storm.add(Change(self.index, ts, record_offset, position, source, from_gen, gen.generation_id,
                                      cause, proto_name, kind, revoked, moved, session, churn))
        if storm is not None:
            self.log.storm(storm, self.first_row)


def _who(ids: list[str], infos: Members) -> str:
    return _names([client_name(infos[m].client_id, infos[m].client_host) for m in ids])


def _also(joined: list[str], left: list[str], after: Members, before: Members) -> str:
    parts = []
    if joined:
        parts.append(_names([client_name(after[m].client_id, after[m].client_host) for m in joined]) + " joined")
    if left:
        parts.append(_names([client_name(before[m].client_id, before[m].client_host) for m in left]) + " left")
    return ("; " + "; ".join(parts)) if parts else ""


class RebalanceLog:
    """The rebalances of one log partition: its rows and its storms."""

    def __init__(self, log_partition: int, storm_count: int, storm_window_ms: int,
                 findings: list[dict[str, Any]], keep_storms: int = 50, since: int | None = None) -> None:
        self.log_partition = log_partition
        self.since = since  # --since: storms that start before it are hidden, as their findings
        self.storm_count = storm_count
        self.storm_window_ms = storm_window_ms
        self.rows: list[dict[str, Any]] = []
        self.findings = findings  # the partition's findings (shared)
        self.storms: list[dict[str, Any]] = []  # the first keep_storms, for the summary
        self.storm_total = 0
        self.keep_storms = keep_storms
        #: every storm's finding, summary entry (None past keep_storms or before --since), its
        #: rebalances, and the record offset of its group's first generation record when its first
        #: rebalance compares with it, for judging a compacted log's (:meth:`drop_cleaned`)
        self.storm_items: list[tuple[dict[str, Any], dict[str, Any] | None, list[tuple[int, int, int, str]],
                                     int | None]] = []

    def track(self, group: str) -> GroupRebalances:
        return GroupRebalances(self, group)

    def storm(self, s: Storm, first_row: int | None = None) -> None:
        """A storm that can no longer grow (``first_row``: the record offset of its group's
        first generation record read: its first rebalance compares with it)."""
        d = s.to_dict(self.storm_count, self.storm_window_ms)
        opens = first_row if s.first is not None and s.first.index == 1 else None
        f = storm_finding(d)
        self.findings.append(f)
        shown = None
        if self.since is None or d["start"] >= self.since:
            self.storm_total += 1
            if len(self.storms) < self.keep_storms:
                self.storms.append(d)
                shown = d
        self.storm_items.append((f, shown, s.evidence, opens))

    def drop_cleaned(self, below: int) -> set[int]:
        """A compacted log (cleaned below offset ``below``): a storm judges only the rebalances
        the log still holds whole. One that starts below it is reported from its rebalances
        above, saying so, when they are a storm on their own (N within a window shorter than
        W), else dropped. Returns the ids of the findings dropped."""
        dropped: set[int] = set()
        for f, shown, evidence, first in self.storm_items:
            if f["record_offset"] is not None and f["record_offset"] >= below:
                if first is not None and first < below:  # its group's earlier rebalances are gone
                    note = (f"; the storm may have begun earlier: the group's generation records below offset "
                            f"{below:,} (the cleaned range, where only the latest record of each key survives) "
                            "are gone")
                    f["message"] += note
                    if shown is not None:
                        shown["message"] += note
                continue
            above = [e for e in evidence if e[0] >= below]
            n = self.storm_count
            ok = any(above[i + n - 1][1] - above[i][1] < self.storm_window_ms for i in range(len(above) - n + 1))
            if not ok:
                dropped.add(id(f))
                if shown is not None:
                    self.storms.remove(shown)
                    self.storm_total -= 1
                continue
            off, ts, pos, src = above[0]
            note = (f"above the cleaned range of the log (below offset {below:,} only the latest record of each "
                    f"key survives; {len(evidence) - len(above)} of the storm's rebalances are there): "
                    f"{len(above)} rebalances from offset {off:,}; the whole episode: ")
            f.update(record_offset=off, timestamp=ts, position=pos, source=src, message=note + f["message"])
            if shown is not None:
                shown.update(record_offset=off, start=ts, position=pos, source=src, count=len(above),
                             message=note + shown["message"])
        return dropped

__all__ = ["Change", "Churn", "GenerationChange", "GroupRebalances", "MemberInfo", "STORM_RULE", "RebalanceLog", "Storm", "StormWatch",
           "client_name", "rebalance_protocol", "storm_finding"]

