"""The audit's rules, declared once: name, what fires it, its legitimate look-alike, the fields
of its finding.

Every text about a rule is rendered from :data:`RULES`: ``spark-audit --help`` and its man
page's RULES section (:mod:`kgtool.cli.spark_audit`), the console's and the report's one-line
meanings, the README's list and ``docs/reference/rules.md`` (``python -m kgtool.docs``). The
sets the replay uses (``kgtool.offsets.tables.RULES``, ``HISTORY_RULES``, ``COMPARING_RULES``,
``kgtool.offsets.rules.END_OF_LOG_RULES``) are read from here too. The code that judges each
rule lives with what it judges: the commit loop (:mod:`kgtool.offsets.store`,
:mod:`kgtool.offsets.rules`), the end of the log (:mod:`kgtool.offsets.end_of_log`), the
rebalances (:mod:`kgtool.offsets.rebalances`), reconciliation
(:mod:`kgtool.offsets.reconciliation`) and the lag phase (:mod:`kgtool.lag.phase`).

Nothing here imports the rest of kgtool: :mod:`kgtool.offsets.tables` imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One rule of ``spark-audit``.

    ``summary`` is one line (the console, the report, the README); ``fires`` and ``look_alike``
    are sentences (the man page, the reference); ``fields`` says what each column of the
    ``findings`` table holds for this rule (``rule``, ``group``, ``log_partition`` and
    ``message`` are the same for every rule); ``notes`` adds what a user needs beside them.
    """

    name: str
    stage: str  # "log": the __consumer_offsets log alone; "lag": needs data partition directories
    summary: str
    fires: str
    look_alike: str
    fields: tuple[tuple[str, str], ...]
    notes: str = ""
    #: judged at the end of the log read (or at --until); --since does not hide its findings
    end_of_log: bool = False
    #: judges the log's history: on a compacted partition no evidence below its cleaned range
    history: bool = False
    #: its finding compares with an earlier commit (previous_record_offset)
    comparing: bool = False


#: The columns every finding has, whatever its rule.
COMMON_FIELDS: tuple[tuple[str, str], ...] = (
    ("rule", "the rule's name"),
    ("group", "the group id"),
    ("log_partition", "the __consumer_offsets partition holding the group's records"),
    ("message", "one sentence saying what happened and what it means"),
)

_COMMIT = (
    ("topic, partition, offset", "the commit's topic partition and committed offset"),
    ("record_offset, position, source, timestamp",
     "the commit record's offset in __consumer_offsets, its batch's byte position, the segment file and "
     "the record's timestamp"),
    ("generation_id", "the generation (KIP-848: group epoch) in effect when the commit was written, null if none"),
)


def _previous(what: str) -> tuple[tuple[str, str], ...]:
    return (("previous_offset, previous_record_offset, previous_position, previous_generation_id", what),)


_NO_PREVIOUS = _previous("null")
_NO_COMMIT = (("topic, partition, offset", "null (the finding is about the group, not one commit)"),)


def _lag_fields(partition: str) -> tuple[tuple[str, str], ...]:
    """The fields of a lag rule's finding (an episode of a group's partitions), ``partition``
    saying when topic and partition are set."""
    return (("topic, partition", partition),
            ("offset, record_offset, position", "null"),
            ("source", "the data partition directory read (the longest copy)"),
            ("timestamp", "the episode's start"),
            ("generation_id", "null"),
            ("previous_offset, previous_record_offset, previous_position, previous_generation_id", "null"))

RULES: tuple[Rule, ...] = (
    Rule(
        "rewind", "log",
        "commit below the previous effective offset while the group is not Empty",
        "a commit becomes effective with an offset lower than the partition's previous effective offset while the "
        "group has members (not Empty), and the zombie rule does not apply",
        "the same lower commit while the group is Empty (no generation, or a generation without members, as "
        "kafka-consumer-groups.sh --reset-offsets requires): a deliberate reset, noted 'reset while Empty' in the "
        "commits table; a commit after the offset was deleted (OffsetDelete, DeleteGroups), which leaves nothing "
        "to compare with",
        _COMMIT + _previous("the earlier effective commit it goes below"),
        history=True, comparing=True,
    ),
    Rule(
        "zombie", "log",
        "commit below what the partition's new owner committed after a rebalance",
        "a commit becomes effective lower than the previous effective offset, after the partition moved (its owner "
        "set in some generation differs from the last non-empty owner set before it) and the new owners already "
        "committed, since the move, an offset above it: a previous owner still committing",
        "a lower commit on a partition that did not move (a rewind); the new owner progressing",
        _COMMIT + _previous("the new owners' highest commit since the move, which this one goes below"),
        history=True, comparing=True,
    ),
    Rule(
        "orphan", "log",
        "commit for a partition no member of the current generation owns",
        "a commit record written while the group has members with known assignments (the classic 'consumer' "
        "protocol type, or KIP-848) for a partition no member owns; a transactional commit is judged against the "
        "generation of its write and reported once its COMMIT marker makes it effective",
        "an Empty group (an admin commit); a cooperative revocation in transit (a member that owned the partition "
        "in the previous generation is still a member: it commits in onPartitionsRevoked before its next join); "
        "groups of other protocol types (connect, custom), whose assignments are opaque and not checked",
        _COMMIT + _NO_PREVIOUS,
        history=True,
    ),
    Rule(
        "epoch-regression", "log",
        "commit with a leader epoch below an earlier commit's",
        "a commit becomes effective with a leader epoch (>= 0) lower than the highest leader epoch of the "
        "partition's earlier effective commits since its last offset tombstone: written from stale metadata",
        "leader epoch -1 (unknown: admin tools, OffsetCommitValue v1), which is not compared",
        _COMMIT + _previous("the earlier effective commit with the highest leader epoch"),
        history=True, comparing=True,
    ),
    Rule(
        "expiring", "log",
        "Empty group whose offsets are past the retention at the log's end",
        "at the end of the log (its partition's last record timestamp; with --until, that instant) the group is "
        "Empty or a simple group without metadata, and an offset is expired by Kafka's condition "
        "(ClassicGroup.offsetExpirationCondition, OffsetExpirationConditionImpl): end >= expire_timestamp when an "
        "OffsetCommitValue v1 carried one, else end - base >= --retention, base being the time the group became "
        "Empty (current_state_timestamp) when known, else the commit timestamp; offsets with an open transaction "
        "are kept, as cleanupExpiredOffsets keeps them. The offsets table's expired column is this rule per offset",
        "an Empty group within the retention; a Stable group with old offsets",
        _COMMIT[:2] + (("generation_id", "the generation of the stored commit, null if none"),) + _NO_PREVIOUS,
        end_of_log=True,
    ),
    Rule(
        "aborted-txn", "log",
        "aborted transactional commit that would otherwise be the latest",
        "a transactional commit whose transaction was ABORTed and which would otherwise be the partition's latest "
        "offset at the log's end: no effective commit, offset tombstone or other transactional commit at a higher "
        "record offset followed it",
        "an abort followed by a successful retry",
        _COMMIT + _previous("the offset the group stays at (the stored commit), null if none"),
        end_of_log=True, history=True,
    ),
    Rule(
        "pending-txn", "log",
        "transactional commit without a marker that would be the latest",
        "a transactional commit with no COMMIT or ABORT marker by the log's end and no effective commit or "
        "tombstone at a higher record offset: the offset is invisible until the transaction completes",
        "a commit whose COMMIT marker follows; a pending commit superseded by a later plain commit",
        _COMMIT + _previous("the stored commit the group is served meanwhile, null if none"),
        end_of_log=True,
    ),
    Rule(
        "rebalance-storm", "log",
        "at least N rebalances of a group within a window W (--storm N/W)",
        "at least N rebalances of one group within any window shorter than W (--storm N/W, default 5/10m); a "
        "rebalance is a rebalances row with rebalance true and a previous generation (the group's creation stops "
        "no consumer), a KIP-848 epoch batched into a later epoch's target assignment (target_epoch) counting "
        "with that one; overlapping windows are one storm, one finding",
        "a rolling restart of static members (member ids replaced in the same generation: no rebalance); a slow "
        "scale-out (one member every ten minutes); one deploy below the threshold",
        _NO_COMMIT + (
            ("record_offset, position, source", "the storm's first rebalance record"),
            ("timestamp", "the storm's start"),
            ("generation_id", "its last generation (group epoch)"),
            ("previous_generation_id", "the generation before its first rebalance"),
            ("previous_offset, previous_record_offset, previous_position", "null"),
        ),
        notes="The finding names the window (first and last rebalance), the count, the members that churned most "
              "(client id and host) and a diagnosis with a recommendation for each case found: the same dynamic "
              "client rejoining again and again (its processing between polls exceeds max.poll.interval.ms: check "
              "it, lower max.poll.records, give it a group.instance.id); a rolling restart of dynamic members (use "
              "static membership, KIP-345, with a session.timeout.ms longer than a restart); an eager assignor "
              "(switch to cooperative-sticky, KIP-429; the partitions revoked are counted against those that "
              "moved); recorded session timeouts below Kafka's default 45000 ms (KIP-735) with members expelled. "
              "For consumer-protocol groups (KIP-848) a rebalance is a group epoch bump, its cause named in that "
              "protocol's terms: member-joined, member-left (a leave heartbeat, or the session timeout: the same "
              "records), member-fenced (by its rebalance timeout), subscription-changed, metadata-changed.",
        history=True,
    ),
    Rule(
        "slow-revocation", "log",
        "consumer-group member fenced after holding partitions pending revocation too long",
        "a consumer-group member (KIP-848) fenced by its rebalance timeout: removed while UNREVOKED_PARTITIONS, at "
        "least its rebalance timeout after its last assignment record (each such record re-arms "
        "GroupMetadataManager's timer); the fence writes the same records as a leave, so it is inferred",
        "a member leaving on its own before its timeout; a session timeout of a member with nothing to revoke; a "
        "classic-protocol member (no rebalance timer)",
        _NO_COMMIT + (
            ("record_offset, position, source, timestamp", "the record that removed the member"),
            ("generation_id", "the group epoch then"),
            ("previous_generation_id", "the member's epoch"),
            ("previous_record_offset", "the record at which the member reached that state, null if unknown"),
            ("previous_offset, previous_position", "null"),
        ),
        notes="The message names the member, its client id and host, the partitions it held and for how long.",
        history=True,
    ),
    Rule(
        "lag-stall", "lag",
        "Burrow's STALL: commits go on, the offset does not move, data keeps arriving",
        "Burrow's STALL on a partition (data partition directories among the inputs): commits go on but the "
        "committed offset does not move over the window (the partition's last 10 commits), with evidence: at "
        "least two commits in the window with the same offset, none of them caught up, while data keeps arriving",
        "a consumer caught up at one of its last 10 commits; an idle topic (no lag); a single commit, which is no "
        "evidence that the offset stood still",
        _lag_fields("the partition when the episode is one partition's, null when several stalled together"),
    ),
    Rule(
        "consumer-stopped", "lag",
        "Burrow's STOP: no commit while the lag grows",
        "Burrow's STOP: a commit followed by a span without commits longer than the window (the last 10 commits, "
        "two at least: one commit spans nothing) spans, while the group is behind (unless it was caught up at one "
        "of the last 10 broker offsets, 10 s apart); from the first --lag-step where that holds (the lag table goes "
        "on after the last commit); one finding for the group's partitions that stopped together",
        "a consumer caught up when it stopped committing (no lag, no STOP); a partition committed once",
        _lag_fields("the partition when one stopped, null when several stopped together"),
    ),
    Rule(
        "lag-growing", "lag",
        "Burrow's WARN (the lag never went down) for longer than --lag-warn",
        "Burrow's WARN lasting longer than --lag-warn (default 5m): the lag at commit time never went down over the "
        "window (the last 10 commits), none of them zero, with evidence: at least two commits whose lag did not go "
        "down",
        "a WARN shorter than --lag-warn; a consumer that catches up now and then",
        _lag_fields("the partition when one lagged, null when several did together"),
    ),
)

#: How the lag rules read Burrow's status (said once for the three).
LAG_NOTES = (
    "The lag rules need data partition directories among the inputs (TOPIC-N directories given, or in broker log "
    "directories; several brokers' copies of a partition are read from the longest). They follow Burrow's "
    "partition status (linkedin/Burrow caching.go, calculatePartitionStatus) over the partition's last 10 commits, "
    "each with its lag at commit time, commits under a second apart merged (inmemory.go); each fires on the lag "
    "episodes (stretches with the same status), one finding per group and episode (the overlapping episodes of "
    "its partitions with that status), naming the owners. The lag at an instant T is end(T) - the committed "
    "offset, end(T) being what ListOffsets by timestamp T answers (the first offset whose record is stamped at or "
    "after T, else the log end offset): exact append time with message.timestamp.type=LogAppendTime, the "
    "producers' clocks with CreateTime."
)

BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}
NAMES: tuple[str, ...] = tuple(r.name for r in RULES)
LOG_NAMES: tuple[str, ...] = tuple(r.name for r in RULES if r.stage == "log")
LAG_NAMES: tuple[str, ...] = tuple(r.name for r in RULES if r.stage == "lag")
END_OF_LOG: frozenset[str] = frozenset(r.name for r in RULES if r.end_of_log)
HISTORY: frozenset[str] = frozenset(r.name for r in RULES if r.history)
COMPARING: frozenset[str] = frozenset(r.name for r in RULES if r.comparing)


def summaries() -> dict[str, str]:
    """Rule name -> its one-line meaning, in rule order (the console, the report)."""
    return {r.name: r.summary for r in RULES}


def help_paragraph() -> str:
    """The rules as ``--help`` lists them: one paragraph, each rule with its one line."""
    return "Rules (any finding exits with status 1): " + "; ".join(f"{r.name} ({r.summary})" for r in RULES) + "."


def _fields_sentence(r: Rule) -> str:
    return "; ".join(f"{cols} {'are' if ',' in cols else 'is'} {what}" for cols, what in r.fields)


def man_text() -> str:
    """The man page's RULES section: a paragraph per rule, then how the lag rules read Burrow."""
    paragraphs = []
    for r in RULES:
        text = f"{r.name}: {r.fires}. Not a finding: {r.look_alike}. In its finding, {_fields_sentence(r)}."
        if r.notes:
            text += " " + r.notes
        paragraphs.append(text)
    paragraphs.append(LAG_NOTES)
    return "\n\n".join(paragraphs)


def markdown_list() -> str:
    """The README's one-line list of rules."""
    return "".join(f"- `{r.name}`: {r.summary}\n" for r in RULES)
