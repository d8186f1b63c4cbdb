"""What an assignment means for a group: balance, movement, revocations, what-if and comparison.

Definitions (relative to the partitions each member ``owned`` before the rebalance):

- *moved*: a partition that had an owner and is now assigned to another member (a partition
  claimed by several members, a stale-generation claim, counts for the claim with the highest
  generation, as ``AbstractStickyAssignor.allSubscriptionsEqual`` resolves it);
- *revoked*: partitions members must give up during the rebalance. With the EAGER protocol
  every member revokes everything it owns before rejoining
  (``ConsumerCoordinator.onJoinPrepare``: stop-the-world); with COOPERATIVE (KIP-429) and the
  KIP-848 consumer protocol only the partitions leaving a member are revoked
  (``ConsumerCoordinator.onJoinComplete``: owned minus assigned);
- *withheld*: subscribed partitions that the assignor left unassigned this round;
  ``CooperativeStickyAssignor`` withholds a partition changing owner until its owner has
  revoked it, and a follow-up rebalance assigns it (``settle`` runs that round).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from kgtool.assignors import registry
from kgtool.assignors.model import Assignment, GroupSpec, MemberSpec, TopicPartition, TopicSpec
from kgtool.documents import quote
from kgtool.errors import InputError, UsageError


# ---------------------------------------------------------------------------------------------
# Statistics


@dataclass
class AssignmentStats:
    """Balance and movement of one assignment."""

    members: int
    #: Partitions assigned this round.
    assigned: int
    #: Subscribed partitions (of existing topics) no member received this round.
    withheld: int
    min: int
    max: int
    mean: float
    stddev: float
    idle_members: list[str]
    #: Partitions that had an owner before and now belong to another member.
    moved: int
    #: Partitions that stay with their previous owner.
    kept: int
    #: Partitions assigned that nobody owned before (new members' first round, new partitions).
    newly_assigned: int
    #: Partitions revoked during the rebalance (see the module docstring), total and per member.
    revoked: int
    revoked_by_member: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "members": self.members,
            "assigned": self.assigned,
            "withheld": self.withheld,
            "partitions_per_member": {
                "min": self.min, "max": self.max, "mean": round(self.mean, 6), "stddev": round(self.stddev, 6),
            },
            "idle_members": self.idle_members,
            "moved": self.moved,
            "kept": self.kept,
            "newly_assigned": self.newly_assigned,
            "revoked": self.revoked,
            "revoked_by_member": self.revoked_by_member,
        }


def previous_owners(group: GroupSpec) -> dict[TopicPartition, str]:
    """Partition -> the member that owned it before; with several claims, the highest
    generation wins, then the first claim (``AbstractStickyAssignor.allSubscriptionsEqual``)."""
    owner: dict[TopicPartition, str] = {}
    best: dict[TopicPartition, int] = {}
    for m in group.members:
        if not m.owned:
            continue
        gen = m.generation if m.generation is not None else -1
        for tp in m.owned:
            prev = best.get(tp)
            if prev is None or gen > prev:
                owner[tp] = m.member_id
                best[tp] = gen
    return owner


def subscribed_partition_count(group: GroupSpec) -> int:
    """Partitions of existing topics that at least one member subscribes to."""
    topics: set[str] = set()
    for m in group.members:
        topics.update(m.topics)
    return sum(group.topics[t].partitions for t in topics if t in group.topics)


def compute_stats(
    group: GroupSpec,
    assignment: Assignment,
    *,
    protocol: str,
    before: GroupSpec | None = None,
) -> AssignmentStats:
    """Statistics of ``assignment`` for ``group``.

    Args:
        group: the group the assignor ran on.
        assignment: its result.
        protocol: ``eager``, ``cooperative`` or ``consumer`` (:class:`AssignorInfo.rebalance_protocol`).
        before: the group whose ``owned`` partitions are the previous assignment (default
            ``group``; a what-if passes the unmodified group so removed members count).
    """
    before = before if before is not None else group
    sizes = [len(parts) for parts in assignment.values()]
    n = len(sizes)
    assigned = sum(sizes)
    mean = assigned / n if n else 0.0
    var = sum((s - mean) ** 2 for s in sizes) / n if n else 0.0
    idle = [m for m, parts in assignment.items() if not parts]
    owner = previous_owners(before)
    moved = kept = 0
    if owner:
        get = owner.get
        for member, parts in assignment.items():
            for tp in parts:
                prev = get(tp)
                if prev is None:
                    continue
                if prev == member:
                    kept += 1
                else:
                    moved += 1
    newly = assigned - moved - kept
    revoked_by: dict[str, int] = {}
    present = set(assignment)
    for m in before.members:
        if not m.owned or m.member_id not in present:
            continue
        if protocol == "eager":
            count = len(m.owned)
        else:
            now = set(assignment.get(m.member_id, ()))
            count = sum(1 for tp in m.owned if tp not in now)
        if count:
            revoked_by[m.member_id] = count
    return AssignmentStats(
        members=n,
        assigned=assigned,
        withheld=max(0, subscribed_partition_count(group) - assigned),
        min=min(sizes) if sizes else 0,
        max=max(sizes) if sizes else 0,
        mean=mean,
        stddev=math.sqrt(var),
        idle_members=idle,
        moved=moved,
        kept=kept,
        newly_assigned=newly,
        revoked=sum(revoked_by.values()),
        revoked_by_member=revoked_by,
    )


# ---------------------------------------------------------------------------------------------
# Running assignors


def _max_generation(group: GroupSpec) -> int:
    return max((m.generation for m in group.members if m.generation is not None), default=0)


def with_owned(group: GroupSpec, assignment: Assignment, generation: int | None = None) -> GroupSpec:
    """The group of the next rebalance: every member owns what ``assignment`` gave it, at
    ``generation`` (default: the group's highest generation + 1)."""
    gen = generation if generation is not None else max(_max_generation(group), 0) + 1
    members = [
        replace(m, owned=tuple(assignment.get(m.member_id, ())), generation=gen) for m in group.members
    ]
    return GroupSpec(topics=group.topics, members=members, assignor=group.assignor)


def run(assignor_name: str, group: GroupSpec) -> Assignment:
    """The assignment the assignor ``assignor_name`` computes for ``group``.

    Raises:
        UsageError: unknown assignor.
    """
    return registry.get(assignor_name).assign(group)


def settle(assignor_name: str, group: GroupSpec, first: Assignment, *, max_rounds: int = 10) -> tuple[Assignment, int]:
    """Run follow-up rebalances while the assignor withholds partitions (cooperative
    protocol: members revoke, then rejoin with what they kept, at the next generation).
    Returns the last assignment and how many rebalances it took (1 when nothing was withheld).

    Usually two rebalances settle a cooperative group; with racks and differing subscriptions
    CooperativeStickyAssignor may move further partitions in the follow-up rounds (seen on
    Kafka's own golden groups), so up to ``max_rounds`` are run; a result that still withholds
    partitions then has ``withheld > 0`` in its statistics."""
    total = subscribed_partition_count(group)
    current, rounds = first, 1
    g = group
    while rounds < max_rounds and sum(len(p) for p in current.values()) < total:
        g = with_owned(g, current)
        current = run(assignor_name, g)
        rounds += 1
    return current, rounds


# ---------------------------------------------------------------------------------------------
# What-if


@dataclass
class WhatIf:
    """Changes simulated before the next rebalance."""

    remove: list[str] = field(default_factory=list)
    #: (member id, subscribed topics)
    add: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    #: topic -> new partition count (a new topic is created)
    partitions: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.remove or self.add or self.partitions)

    def describe(self) -> list[str]:
        out = [f"remove {m}" for m in self.remove]
        out += [f"add {m} subscribed to {','.join(t)}" for m, t in self.add]
        out += [f"{t} has {n} partitions" for t, n in self.partitions.items()]
        return out


def parse_add(text: str) -> tuple[str, tuple[str, ...]]:
    """``MEMBER=topic,topic`` -> (member, topics).

    Raises:
        UsageError: no ``=`` or no topic.
    """
    member, sep, topics = text.partition("=")
    names = tuple(t.strip() for t in topics.split(",") if t.strip())
    if not sep or not member.strip() or not names:
        raise UsageError(f"--add expects MEMBER=topic[,topic...], got {text!r}")
    return member.strip(), names


def parse_partitions(text: str) -> tuple[str, int]:
    """``TOPIC=N`` -> (topic, N).

    Raises:
        UsageError: malformed or negative.
    """
    topic, sep, count = text.rpartition("=")
    try:
        n = int(count)
    except ValueError:
        n = -1
    if not sep or not topic or n < 0 or n > 2**31 - 1:
        raise UsageError(f"--partitions expects TOPIC=N with N >= 0, got {text!r}")
    return topic, n


def override_partitions(group: GroupSpec, counts: Mapping[str, int], *, allow_shrink: bool = False) -> GroupSpec:
    """The group with these partition counts (new topics created).

    Raises:
        UsageError: a count below the current one (Kafka cannot remove partitions) unless
            ``allow_shrink``, or below an owned partition.
    """
    topics = dict(group.topics)
    for t, n in counts.items():
        old = topics.get(t)
        if old is not None and n < old.partitions and not allow_shrink:
            raise UsageError(
                f"--partitions {t}={n}: {t} has {old.partitions} partitions and Kafka cannot remove partitions"
            )
        for m in group.members:
            for tt, p in m.owned:
                if tt == t and p >= n:
                    raise UsageError(f"--partitions {t}={n}: member {m.member_id!r} owns {t}-{p}")
        racks = old.racks if old is not None and old.racks is not None and len(old.racks) == n else None
        topics[t] = TopicSpec(name=t, partitions=n, racks=racks)
    return GroupSpec(topics=topics, members=list(group.members), assignor=group.assignor)


def apply_what_if(group: GroupSpec, what_if: WhatIf) -> GroupSpec:
    """The group as the next rebalance sees it after ``what_if``.

    Raises:
        UsageError: removing an unknown member, adding an existing one, or subscribing a new
            member to an unknown topic.
    """
    g = override_partitions(group, what_if.partitions) if what_if.partitions else group
    ids = {m.member_id for m in g.members}
    for m in what_if.remove:
        if m not in ids:
            raise UsageError(f"--remove {m}: no such member (members: {_sample(ids)})")
    gone = set(what_if.remove)
    members = [m for m in g.members if m.member_id not in gone]
    ids -= gone
    for member, topics in what_if.add:
        if member in ids:
            raise UsageError(f"--add {member}: the group already has a member {member!r}")
        for t in topics:
            if t not in g.topics:
                raise UsageError(f"--add {member}: unknown topic {t!r} (give its size with --partitions {t}=N)")
        ids.add(member)
        # A member joining for the first time owns nothing and has no generation yet.
        members.append(MemberSpec(member_id=member, topics=topics))
    return GroupSpec(topics=g.topics, members=members, assignor=g.assignor)


def _sample(ids: Iterable[str], limit: int = 8) -> str:
    items = sorted(ids)
    more = f", ... ({len(items)} in all)" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def has_owned(group: GroupSpec) -> bool:
    return any(m.owned for m in group.members)


# ---------------------------------------------------------------------------------------------
# The whole analysis


@dataclass
class AssignResult:
    """One assignor's answer for one group, with its statistics."""

    assignor: str
    rebalance_protocol: str
    group: GroupSpec
    assignment: Assignment
    stats: AssignmentStats
    #: The assignment after follow-up rebalances when the assignor withheld partitions.
    settled: Assignment | None = None
    settled_stats: AssignmentStats | None = None
    rebalances: int = 1
    #: The current assignment a what-if starts from, when kgtool computed it first.
    baseline: Assignment | None = None
    what_if: list[str] = field(default_factory=list)


def analyse(assignor_name: str, group: GroupSpec, what_if: WhatIf | None = None, *, settle_rounds: bool = True) -> AssignResult:
    """Run ``assignor_name`` on ``group`` (after ``what_if``) and measure the result.

    A what-if simulates the *next* rebalance from the current assignment: the members'
    ``owned`` partitions, or, when nobody owns anything, the assignment the assignor computes
    for the unchanged group first.

    Raises:
        UsageError: unknown assignor, bad what-if.
    """
    name = registry.canonical_name(assignor_name)
    protocol = registry.info(name).rebalance_protocol
    baseline = None
    before = group
    if what_if:
        if not has_owned(group):
            baseline_assignment = run(name, group)
            baseline_assignment, _ = settle(name, group, baseline_assignment)
            baseline = baseline_assignment
            before = with_owned(group, baseline_assignment)
        target = apply_what_if(before, what_if)
    else:
        target = group
    assignment = run(name, target)
    stats = compute_stats(target, assignment, protocol=protocol, before=before)
    result = AssignResult(
        assignor=name, rebalance_protocol=protocol, group=target, assignment=assignment, stats=stats,
        baseline=baseline, what_if=what_if.describe() if what_if else [],
    )
    if settle_rounds and stats.withheld and protocol == "cooperative":
        settled, rounds = settle(name, target, assignment)
        if rounds > 1:
            result.settled, result.rebalances = settled, rounds
            # Movement of the whole cooperative rebalance, from the state before it.
            result.settled_stats = compute_stats(target, settled, protocol=protocol, before=before)
    return result


@dataclass
class CompareRow:
    assignor: str
    rebalance_protocol: str
    rebalances: int
    moved: int
    revoked: int
    kept: int
    newly_assigned: int
    min: int
    max: int
    stddev: float
    idle_members: int

    def to_json(self) -> dict:
        return {
            "assignor": self.assignor, "rebalance_protocol": self.rebalance_protocol,
            "rebalances": self.rebalances, "moved": self.moved, "revoked": self.revoked, "kept": self.kept,
            "newly_assigned": self.newly_assigned, "min": self.min, "max": self.max,
            "stddev": round(self.stddev, 6), "idle_members": self.idle_members,
        }


def compare(names: list[str], group: GroupSpec, what_if: WhatIf | None = None) -> list[CompareRow]:
    """Each assignor's cost for the next rebalance of ``group``, side by side.

    ``revoked`` is what members stop consuming during the rebalance: everything they own under
    an eager protocol (stop-the-world), only the partitions that move under cooperative or
    KIP-848 ones. ``moved`` counts partitions that end with another owner, after the
    follow-up rebalance of a cooperative assignor.
    """
    rows = []
    for name in names:
        r = analyse(name, group, what_if)
        s = r.settled_stats or r.stats
        # Revocations of the whole (possibly multi-round) rebalance are the first round's:
        # follow-up rounds only hand out withheld partitions.
        rows.append(
            CompareRow(
                assignor=r.assignor, rebalance_protocol=r.rebalance_protocol, rebalances=r.rebalances,
                moved=s.moved, revoked=r.stats.revoked, kept=s.kept, newly_assigned=s.newly_assigned,
                min=s.min, max=s.max, stddev=s.stddev, idle_members=len(s.idle_members),
            )
        )
    return rows


# ---------------------------------------------------------------------------------------------
# Validation of a given assignment


@dataclass
class ValidationReport:
    problems: list[str]
    checked_partitions: int
    #: The rebalance protocol the assignment was checked under (``eager``, ``cooperative``,
    #: ``consumer``).
    rebalance_protocol: str = "eager"
    #: Cooperative protocol: partitions left out of the assignment while their current owner
    #: revokes them (owner -> partitions); a follow-up rebalance assigns them (KIP-429).
    pending_revocation: Assignment = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def pending_count(self) -> int:
        return sum(map(len, self.pending_revocation.values()))


def validation_protocol(doc: object, assignor: str | None) -> str:
    """The rebalance protocol to check an assignment file under: the file's own
    ``rebalance_protocol`` or ``assignor`` (kgtool's ``--format json`` output carries both),
    else ``assignor`` (--assignor, or the group's), else ``eager`` (the strictest: every
    subscribed partition assigned).

    Raises:
        UsageError: an assignor name kgtool does not know.
    """
    if isinstance(doc, Mapping):
        declared = doc.get("rebalance_protocol")
        if declared in ("eager", "cooperative", "consumer"):
            return str(declared)
        if isinstance(doc.get("assignor"), str):
            assignor = doc["assignor"]
    if assignor:
        return registry.info(assignor).rebalance_protocol
    return "eager"


def validate(
    group: GroupSpec, assignment: Assignment, *, protocol: str = "eager", limit: int = 1000
) -> ValidationReport:
    """Check ``assignment`` against ``group``: every subscribed partition exactly once, only to
    members subscribed to its topic, only existing partitions, only members of the group.

    Under the cooperative protocol (``protocol="cooperative"``) a partition may also be left
    out while the member that owns it now (``owned``) revokes it: the assignor withholds a
    partition changing owner for one rebalance, and the follow-up rebalance assigns it
    (KIP-429; AbstractStickyAssignor / CooperativeStickyAssignor). Such partitions are listed
    in ``pending_revocation``, not as problems. A partition given to a new member while another
    member still owns it is a problem there, as ConsumerCoordinator.validateCooperativeAssignment
    refuses it ("Assignor supporting the COOPERATIVE protocol violates its requirements").

    At most ``limit`` problems are listed; the last line says how many more there were.
    """
    problems: list[str] = []
    more = 0

    def problem(text: str) -> None:
        nonlocal more
        if len(problems) < limit:
            problems.append(text)
        else:
            more += 1

    cooperative = protocol == "cooperative"
    members = {m.member_id: m for m in group.members}
    current_owner: dict[TopicPartition, str] = {}
    if cooperative:
        for m in group.members:
            for tp in m.owned:
                current_owner.setdefault(tp, m.member_id)
    owner: dict[TopicPartition, str] = {}
    checked = 0
    for member, parts in assignment.items():
        spec = members.get(member)
        if spec is None:
            problem(f"{member}: not a member of the group")
        subs = set(spec.topics) if spec is not None else set()
        for tp in parts:
            checked += 1
            t, p = tp
            topic = group.topics.get(t)
            if topic is None:
                problem(f"{member}: {t}-{p}: unknown topic")
                continue
            if not 0 <= p < topic.partitions:
                problem(f"{member}: {t}-{p}: no such partition ({t} has {topic.partitions})")
                continue
            prev = owner.get(tp)
            if prev is not None:
                problem(f"{t}-{p}: assigned to both {prev} and {member}" if prev != member else f"{member}: {t}-{p} listed twice")
            else:
                owner[tp] = member
            if spec is not None and t not in subs:
                problem(f"{member}: {t}-{p}: member is not subscribed to {t}")
    for m in group.members:
        if m.member_id not in assignment:
            problem(f"{m.member_id}: member missing from the assignment")
    pending: Assignment = {}
    if cooperative:
        for tp, new_owner in owner.items():
            old = current_owner.get(tp)
            if old is not None and old != new_owner and tp not in assignment.get(old, ()):
                problem(
                    f"{tp[0]}-{tp[1]}: assigned to {new_owner} while {old} still owns it: under the cooperative "
                    f"protocol {old} revokes it first and a follow-up rebalance assigns it"
                )
    subscribed = sorted({t for m in group.members for t in m.topics if t in group.topics})
    for t in subscribed:
        missing = [p for p in range(group.topics[t].partitions) if (t, p) not in owner]
        if cooperative:
            unowned = []
            for p in missing:
                old = current_owner.get((t, p))
                if old is not None:
                    pending.setdefault(old, []).append((t, p))
                else:
                    unowned.append(p)
            missing = unowned
        if missing:
            shown = ", ".join(str(p) for p in missing[:20]) + (", ..." if len(missing) > 20 else "")
            problem(f"{t}: {len(missing)} subscribed partition(s) unassigned: {shown}")
    if more:
        problems.append(f"... and {more} more problems")
    return ValidationReport(problems=problems, checked_partitions=checked, rebalance_protocol=protocol,
                            pending_revocation=pending)


def assignment_from_document(doc: object, source: str) -> Assignment:
    """An assignment file -> :data:`Assignment`. Accepted: kgtool's own ``--format json``
    output (``{"assignment": {member: {topic: [p]}}}``), ``{member: {topic: [p]}}`` and
    ``{member: [[topic, p], ...]}`` (the golden-case shape).

    Raises:
        InputError: anything else, naming the member.
    """
    if isinstance(doc, Mapping) and "assignment" in doc and isinstance(doc["assignment"], Mapping):
        doc = doc["assignment"]
    if not isinstance(doc, Mapping):
        raise InputError(f"{source}: expected {{member: {{topic: [partitions]}}}} or kgtool's JSON output")
    out: Assignment = {}
    for member, parts in doc.items():
        if not isinstance(member, str):
            raise InputError(f"{source}: member id {quote(member)} must be a string")
        lst: list[TopicPartition] = []
        if isinstance(parts, Mapping):
            for t, ps in parts.items():
                if not isinstance(ps, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in ps):
                    raise InputError(f"{source}: member {quote(member)}: partitions of {quote(t)} must be a list of integers")
                lst.extend((str(t), p) for p in ps)
        elif isinstance(parts, list):
            for item in parts:
                if not (
                    isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
                    and isinstance(item[1], int) and not isinstance(item[1], bool)
                ):
                    raise InputError(f"{source}: member {quote(member)}: entry {quote(item)} is not [topic, partition]")
                lst.append((item[0], item[1]))
        elif parts is None:
            pass
        else:
            raise InputError(f"{source}: member {quote(member)}: expected {{topic: [partitions]}} or [[topic, partition], ...]")
        out[member] = lst
    return out


# ---------------------------------------------------------------------------------------------
# Replay of recorded rounds (group-metadata records)


@dataclass
class ReplayResult:
    """A recorded round next to what the assignor computes from the recorded subscriptions."""

    group_id: str
    generation: int
    assignor: str
    line: int
    offset: int | None
    recorded: Assignment
    computed: Assignment
    #: member -> (recorded, computed), sorted, for members whose partitions differ.
    differences: dict[str, tuple[list[TopicPartition], list[TopicPartition]]]

    @property
    def matches(self) -> bool:
        return not self.differences


def replay(rounds: list, assignor_name: str | None = None) -> list[ReplayResult]:
    """For each :class:`~kgtool.assignors.group_input.RecordedRound`, run the group's selected
    protocol (or ``assignor_name``) on the recorded subscriptions and compare partitions per
    member. Order is not compared: ``ConsumerProtocol.serializeAssignment`` groups partitions
    by topic in hash-map order, so the record does not keep the assignor's order.

    Raises:
        UsageError: a round without a protocol and no ``assignor_name``, or an unknown protocol.
    """
    results = []
    for r in rounds:
        name = assignor_name or r.protocol
        if not name:
            raise UsageError(f"generation {r.generation} of {r.group_id!r} has no protocol: give --assignor")
        name = registry.canonical_name(name)
        computed = run(name, r.group)
        diffs = {}
        for member in dict.fromkeys([*r.recorded, *computed]):
            a = sorted(r.recorded.get(member, ()))
            b = sorted(computed.get(member, ()))
            if a != b:
                diffs[member] = (a, b)
        results.append(
            ReplayResult(
                group_id=r.group_id, generation=r.generation, assignor=name, line=r.line, offset=r.offset,
                recorded=r.recorded, computed=computed, differences=diffs,
            )
        )
    return results
