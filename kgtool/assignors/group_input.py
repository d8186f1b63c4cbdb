"""Described groups -> :class:`~kgtool.assignors.model.GroupSpec`.

Three inputs, detected from the text (see :func:`load_group`):

1. A YAML or JSON description (the described-group shape; also the golden-case shape)::

       assignor: cooperative-sticky        # optional, or --assignor
       group: orders-service               # optional
       topics:
         orders: 6                         # partition count
         payments: {partitions: 3, racks: [[r1, r2], [r2, r3], [r3, r1]]}
       members:
         - id: consumer-1
           topics: [orders, payments]
           owned: {orders: [0, 1]}         # or [[orders, 0], [orders, 1]]
           generation: 4
           rack: r1
           instance_id: null               # or instanceId

2. The text of ``kafka-consumer-groups.sh --describe --group G --members [--verbose]`` (and of
   the default ``--describe``/``--offsets`` view), laid out by Kafka's
   ``ConsumerGroupCommand.printMembers`` / ``printOffsets`` (tools/, 4.x; 3.x had one verbose
   ``ASSIGNMENT`` column ``orders(0,1),payments(2)`` where 4.x prints ``CURRENT-EPOCH
   CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT`` as ``orders:0,1;payments:2``).

3. Group-metadata records as ``decode-batch --format jsonl`` prints them (see
   :func:`load_group_metadata`).

Every error is an :class:`~kgtool.errors.InputError` naming the source and the culprit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import chain, repeat
from operator import itemgetter, methodcaller
from typing import Any

from kgtool import documents
from kgtool.codec import lines
from kgtool.assignors.model import Assignment, GroupSpec, MemberSpec, TopicPartition, TopicSpec
from kgtool.documents import quote
from kgtool.errors import InputError

#: Kafka's int32 fields (partition ids and counts, generation ids).
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
#: Largest partition count of one topic (partition ids are int32 in Kafka's protocol).
MAX_PARTITIONS = INT32_MAX
#: Default of ``assign --max-partitions``: partitions in all the group's topics. Kafka's
#: large-group test shape (500 topics x 2,000 partitions) is exactly this; a real topic rarely
#: has more than about 10**5 partitions.
DEFAULT_MAX_PARTITIONS = 1_000_000

_TOP_KEYS = {"assignor", "group", "group_id", "topics", "members"}
_MEMBER_KEYS = {
    "id", "member_id", "memberId", "topics", "owned", "generation", "rack", "instance_id",
    "instanceId", "group_instance_id", "groupInstanceId",
}


@dataclass
class LoadedGroup:
    """A parsed input: the group, how it was read, and what the reader had to assume."""

    group: GroupSpec
    #: ``yaml``, ``json``, ``describe-members``, ``describe-offsets`` or ``group-metadata``.
    kind: str
    group_id: str | None = None
    #: Assumptions a user should know about (inferred partition counts, subscriptions).
    notes: list[str] = field(default_factory=list)
    #: Partition counts guessed from the assignment (describe text, group-metadata records).
    inferred_partitions: bool = False
    #: Group-metadata input: every recorded round, in file order (see :func:`load_group_metadata`).
    rounds: list[RecordedRound] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Entry point and format detection


def detect_kind(text: str) -> str:
    """``json``, ``jsonl``, ``describe`` or ``yaml`` for an input text."""
    stripped = text.lstrip()
    if stripped.startswith("{") or stripped.startswith("["):
        first_line = stripped.split("\n", 1)[0].strip()
        # decode-batch --format jsonl: one complete object per line
        if "\n" in stripped.strip() and first_line.startswith("{") and first_line.endswith("}"):
            try:
                documents.load_json(first_line, "")
                return "jsonl"
            except InputError:
                pass
        return "json"
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if is_describe_header(s):
            return "describe"
        if s.startswith(_DESCRIBE_CHATTER):
            continue
        break
    return "yaml"


#: Lines kafka-consumer-groups.sh prints around its tables (some on stderr, often captured too).
_DESCRIBE_CHATTER = ("Consumer group ", "Warning:", "Error:", "Note:")


def is_describe_header(line: str) -> bool:
    """The header line of a ``kafka-consumer-groups.sh --describe`` table.

    Since KIP-379 (Kafka 2.4, several groups per --describe) every view starts with a GROUP
    column; before it, the offsets view starts with TOPIC and the members view with
    CONSUMER-ID (KIP-175, ConsumerGroupCommand.printOffsets / printMembers)."""
    tokens = line.split()
    return bool(tokens) and tokens[0] in ("GROUP", "TOPIC", "CONSUMER-ID") and "CONSUMER-ID" in tokens


def load_group(
    text: str, source: str, *, group_id: str | None = None, max_partitions: int = DEFAULT_MAX_PARTITIONS
) -> LoadedGroup:
    """Parse any supported input into a group (the last group-metadata record for JSONL).

    Args:
        text: the whole input.
        source: its name in messages (a path or ``<stdin>``).
        group_id: which group to take when the input holds several.
        max_partitions: the most partitions the group's topics may have in all (every
            recorded round's, for group-metadata records).

    Raises:
        InputError: malformed input, naming the source and the culprit (line for YAML/JSON);
            more than ``max_partitions`` partitions.
    """
    loaded = _load_group(text, source, group_id=group_id)
    for g in [loaded.group, *(r.group for r in loaded.rounds)]:
        _check_partition_total(g, max_partitions, source)
    return loaded


def _load_group(text: str, source: str, *, group_id: str | None) -> LoadedGroup:
    kind = detect_kind(text)
    if kind == "describe":
        return parse_describe_text(text, source, group_id=group_id)
    if kind == "jsonl" or (kind == "json" and _looks_like_records(text)):
        rounds = load_group_metadata(text, source, group_id=group_id)
        # The group's current state is the last round: its recorded assignment is what each
        # member owns now, at that generation.
        last = rounds[-1]
        members = [
            replace(m, owned=tuple(last.recorded.get(m.member_id, ())), generation=last.generation)
            for m in last.group.members
        ]
        group = GroupSpec(topics=last.group.topics, members=members, assignor=last.protocol)
        return LoadedGroup(
            group=group, kind="group-metadata", group_id=last.group_id, notes=list(last.notes),
            inferred_partitions=True, rounds=rounds,
        )
    if kind == "json":
        doc = parse_json(text, source)
    else:
        doc = parse_yaml(text, source)
    loaded = group_from_document(doc, source)
    loaded.kind = kind
    if group_id is not None and loaded.group_id is not None and loaded.group_id != group_id:
        raise InputError(f"{source}: describes group {quote(loaded.group_id)}, not {quote(group_id)}")
    return loaded


def parse_json(text: str, source: str) -> Any:
    """A JSON document (:func:`kgtool.documents.load_json`: size, depth and value-count guards;
    errors placed by line and column)."""
    return documents.load_json(text, source)


def parse_yaml(text: str, source: str) -> Any:
    """A YAML document, plain data only (:func:`kgtool.documents.load_yaml`: the same guards,
    aliases counted as all they name; errors placed by line and column)."""
    return documents.load_yaml(text, source)


# ---------------------------------------------------------------------------------------------
# Limits


def partition_total_problem(counts: Mapping[str, int], limit: int) -> str | None:
    """Why a group with these partition counts is refused, or None.

    The assignors hold a few arrays of one entry per partition; past ``limit`` partitions in
    all (``--max-partitions``) the group is refused before anything is allocated, instead of
    ending in ``MemoryError`` (a topic of 10**9 partitions asks for 8 GB per array)."""
    total = sum(counts.values())
    if total <= limit:
        return None
    largest = max(counts, key=counts.__getitem__)
    return (
        f"{total:,} partitions in all (topic {quote(largest, 40)} has {counts[largest]:,}): more than "
        f"--max-partitions {limit:,} (raise it if this machine has the memory)"
    )


def _check_partition_total(group: GroupSpec, limit: int, source: str) -> None:
    problem = partition_total_problem({t: s.partitions for t, s in group.topics.items()}, limit)
    if problem is not None:
        raise InputError(f"{source}: {problem}")


# ---------------------------------------------------------------------------------------------
# YAML / JSON documents


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _got(value: Any) -> str:
    """What a value of the wrong type is, for "expected X, got Y" (bounded length)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return quote(value)


def _key(name: Any) -> str:
    """A mapping key in a field path: ``topics['orders']``."""
    return f"[{quote(name, 40)}]"


def _wrong(source: str, path: str, expected: str, value: Any) -> InputError:
    """The one-line error for a field of the wrong type, named by its path."""
    return InputError(f"{source}: {path}: expected {expected}, got {_got(value)}")


def _names(keys: Iterable[Any]) -> str:
    """Key names for a message: sorted, each cut short, at most five."""
    names = sorted(map(str, keys))
    shown = ", ".join(n if len(n) <= 40 else n[:37] + "..." for n in names[:5])
    return shown + (f" (and {len(names) - 5:,} more)" if len(names) > 5 else "")


def _opt_str(value: Any, path: str, source: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise _wrong(source, path, "a string", value)


def _parse_topics(raw: Any, source: str) -> dict[str, TopicSpec]:
    if not isinstance(raw, Mapping):
        raise _wrong(source, "topics", "a mapping of topic name -> partition count", raw)
    topics: dict[str, TopicSpec] = {}
    for name, spec in raw.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"{source}: topics: topic name {quote(name)} must be a non-empty string")
        path = f"topics{_key(name)}"
        racks = None
        if _is_int(spec):
            count = spec
        elif isinstance(spec, Mapping):
            extra = set(spec) - {"partitions", "racks"}
            if extra:
                raise InputError(f"{source}: {path}: unknown key(s) {_names(extra)} (expected partitions, racks)")
            count = spec.get("partitions")
            if not _is_int(count):
                raise _wrong(source, f"{path}.partitions", "a partition count (an integer)", count)
        else:
            raise _wrong(source, path, "a partition count or {partitions: N, racks: [...]}", spec)
        if count < 0 or count > MAX_PARTITIONS:
            raise InputError(f"{source}: {path}: partition count {count:,} out of range (0 to {MAX_PARTITIONS:,})")
        raw_racks = spec.get("racks") if isinstance(spec, Mapping) else None
        if raw_racks is not None:
            if not isinstance(raw_racks, list):
                raise _wrong(source, f"{path}.racks", "a list of the replica racks of each partition", raw_racks)
            if len(raw_racks) != count:
                raise InputError(
                    f"{source}: {path}.racks: must list the replica racks of each of its {count:,} "
                    f"partitions, got {len(raw_racks):,}"
                )
            rows = []
            for p, row in enumerate(raw_racks):
                if not isinstance(row, list):
                    raise _wrong(source, f"{path}.racks[{p}]", "a list of rack names", row)
                for i, r in enumerate(row):
                    if not isinstance(r, str):
                        raise _wrong(source, f"{path}.racks[{p}][{i}]", "a rack name (a string)", r)
                rows.append(tuple(row))
            racks = tuple(rows)
        topics[name] = TopicSpec(name=name, partitions=count, racks=racks)
    return topics


def _parse_owned(
    raw: Any, member: str, path: str, topics: Mapping[str, TopicSpec], source: str
) -> tuple[TopicPartition, ...]:
    """``{topic: [p, ...]}`` or ``[[topic, p], ...]`` -> owned partitions in the given order."""
    if raw is None:
        return ()
    owned: list[TopicPartition] = []
    if isinstance(raw, Mapping):
        for topic, parts in raw.items():
            if not isinstance(topic, str):
                raise _wrong(source, path, "topic names (strings) as keys", topic)
            if not isinstance(parts, list):
                raise _wrong(source, f"{path}{_key(topic)}", "a list of partition numbers", parts)
            if not all(map(_is_int, parts)):
                i = next(i for i, p in enumerate(parts) if not _is_int(p))
                raise _wrong(source, f"{path}{_key(topic)}[{i}]", "a partition number (an integer)", parts[i])
            owned.extend(zip(repeat(topic), parts))
    elif isinstance(raw, list):
        # [[topic, p], ...]: keep the order exactly (it is the member's reported order).
        for i, item in enumerate(raw):
            if not (isinstance(item, list) and len(item) == 2):
                raise _wrong(source, f"{path}[{i}]", "[topic, partition]", item)
            t, p = item
            if not isinstance(t, str):
                raise _wrong(source, f"{path}[{i}][0]", "a topic name (a string)", t)
            if not _is_int(p):
                raise _wrong(source, f"{path}[{i}][1]", "a partition number (an integer)", p)
            owned.append((t, p))
    else:
        raise _wrong(source, path, "{topic: [partitions]} or [[topic, partition], ...]", raw)
    _check_owned(owned, member, topics, source)
    return tuple(owned)


def _check_owned(owned: list[TopicPartition], member: str, topics: Mapping[str, TopicSpec], source: str) -> None:
    """Owned partitions (topic names and partition numbers already typed) against the topics."""
    by_topic: dict[str, list[int]] = {}
    for t, p in owned:
        lst = by_topic.get(t)
        if lst is None:
            by_topic[t] = lst = []
        lst.append(p)
    for t, parts in by_topic.items():
        spec = topics.get(t)
        if spec is None:
            raise InputError(f"{source}: member {quote(member)} owns partitions of unknown topic {quote(t)}")
        if parts and (min(parts) < 0 or max(parts) >= spec.partitions):
            bad = next(p for p in parts if p < 0 or p >= spec.partitions)
            raise InputError(
                f"{source}: member {quote(member)}: owned partition {t}-{quote(bad)} out of range "
                f"({t} has {spec.partitions} partitions)"
            )
        if len(set(parts)) != len(parts):
            seen: set[int] = set()
            for p in parts:
                if p in seen:
                    raise InputError(f"{source}: member {quote(member)} owns partition {t}-{p} twice")
                seen.add(p)


def group_from_document(doc: Any, source: str) -> LoadedGroup:
    """A parsed YAML/JSON document (described-group or golden-case shape) -> group.

    Every field is type-checked; a wrong one is reported by its path
    (``members[2].owned['orders'][0]: expected a partition number (an integer), got 'x'``).

    Raises:
        InputError: unknown keys, duplicate members, unknown topics, owned partitions out of
            range or owned twice by one member, wrong types.
    """
    if not isinstance(doc, Mapping):
        got = "an empty document" if doc is None else _got(doc)
        raise InputError(f"{source}: expected a mapping with 'topics' and 'members', got {got}")
    extra = set(doc) - _TOP_KEYS
    if extra:
        raise InputError(f"{source}: unknown key(s) {_names(extra)} (expected {', '.join(sorted(_TOP_KEYS))})")
    if "topics" not in doc or "members" not in doc:
        missing = [k for k in ("topics", "members") if k not in doc]
        raise InputError(f"{source}: missing {' and '.join(repr(k) for k in missing)}")
    assignor = _opt_str(doc.get("assignor"), "assignor", source)
    group_key = "group" if "group" in doc else "group_id"
    group_id = _opt_str(doc.get(group_key), group_key, source)
    topics = _parse_topics(doc["topics"] if doc["topics"] is not None else {}, source)
    raw_members = doc["members"]
    if raw_members is None:
        raw_members = []
    if not isinstance(raw_members, list):
        raise _wrong(source, "members", "a list of members", raw_members)
    members: list[MemberSpec] = []
    seen_ids: set[str] = set()
    for index, m in enumerate(raw_members):
        path = f"members[{index}]"
        if not isinstance(m, Mapping):
            raise _wrong(source, path, "a mapping with 'id' and 'topics'", m)
        extra = set(m) - _MEMBER_KEYS
        if extra:
            raise InputError(f"{source}: {path}: unknown key(s) {_names(extra)}")
        id_key = next((k for k in ("id", "member_id", "memberId") if k in m), "id")
        member_id = m.get(id_key)
        if not isinstance(member_id, str):
            raise _wrong(source, f"{path}.{id_key}", "a member id (a string)", member_id)
        if member_id in seen_ids:
            raise InputError(f"{source}: duplicate member {quote(member_id)}")
        seen_ids.add(member_id)
        subs = m.get("topics")
        if isinstance(subs, str):
            subs = [subs]
        if not isinstance(subs, list):
            raise _wrong(source, f"{path}.topics", "a list of topic names", subs)
        subscribed: set[str] = set()
        for i, t in enumerate(subs):
            if not isinstance(t, str):
                raise _wrong(source, f"{path}.topics[{i}]", "a topic name (a string)", t)
            if t not in topics:
                raise InputError(f"{source}: member {quote(member_id)} subscribes to unknown topic {quote(t)}")
            if t in subscribed:
                raise InputError(f"{source}: member {quote(member_id)} subscribes to {quote(t)} twice")
            subscribed.add(t)
        generation = m.get("generation")
        if generation is not None:
            if not _is_int(generation):
                raise _wrong(source, f"{path}.generation", "a generation (an integer)", generation)
            if not INT32_MIN <= generation <= INT32_MAX:
                raise InputError(f"{source}: {path}.generation: {quote(generation)} out of range (a 32-bit integer)")
        instance_id = None
        for key in ("instance_id", "instanceId", "group_instance_id", "groupInstanceId"):
            if m.get(key) is not None:
                instance_id = _opt_str(m[key], f"{path}.{key}", source)
        members.append(
            MemberSpec(
                member_id=member_id,
                topics=tuple(subs),
                owned=_parse_owned(m.get("owned"), member_id, f"{path}.owned", topics, source),
                generation=generation,
                rack=_opt_str(m.get("rack"), f"{path}.rack", source),
                instance_id=instance_id,
            )
        )
    _check_static_members(members, source)
    return LoadedGroup(group=GroupSpec(topics=topics, members=members, assignor=assignor), kind="yaml", group_id=group_id)


def _check_static_members(members: list[MemberSpec], source: str) -> None:
    # GroupMetadataManager keys static members by group.instance.id: two members with one id
    # cannot be in the same generation.
    seen: dict[str, str] = {}
    for m in members:
        if m.instance_id is None:
            continue
        other = seen.get(m.instance_id)
        if other is not None:
            raise InputError(
                f"{source}: members {quote(other)} and {quote(m.member_id)} share the group.instance.id {quote(m.instance_id)}"
            )
        seen[m.instance_id] = m.member_id


# ---------------------------------------------------------------------------------------------
# kafka-consumer-groups.sh --describe text

#: Verbose ASSIGNMENT cell before 4.x: ``orders(0,1),payments(2)`` (``, `` between topics
#: before 3.x); topic names are [a-zA-Z0-9._-].
_OLD_ASSIGNMENT = re.compile(r"([A-Za-z0-9._-]+)\(([0-9,\s]*)\)")
_MISSING = "-"  # ConsumerGroupCommand.MISSING_COLUMN_VALUE
_RPARTITION_COLON = methodcaller("rpartition", ":")
_TOPIC_OF = itemgetter(0)
_SEP_OF = itemgetter(1)
_PARTITION_OF = itemgetter(1)
_PARTS_OF = itemgetter(2)


def parse_assignment_cell(cell: str) -> list[TopicPartition]:
    """One assignment cell of the members view -> partitions (``-`` is none).

    4.x ``getAssignmentString``: ``topic:0,1;other:2`` (topics sorted, partitions sorted);
    3.x: ``topic(0,1),other(2)``.

    Raises:
        ValueError: the cell is in neither form (the caller adds the location).
    """
    cell = cell.strip()
    if not cell or cell == _MISSING:
        return []
    out: list[TopicPartition] = []
    if "(" in cell:
        pos = 0
        for match in _OLD_ASSIGNMENT.finditer(cell):
            gap = cell[pos:match.start()].strip(" ,")
            if gap:
                raise ValueError(f"unexpected {quote(gap)}")
            topic, parts = match.group(1), match.group(2)
            if parts.strip():
                out.extend((topic, int(p)) for p in parts.split(","))
            pos = match.end()
        if cell[pos:].strip(" ,"):
            raise ValueError(f"unexpected {quote(cell[pos:].strip())}")
        return out
    # C-level loops: a group of 2,000 members x 500 topics is a million of these.
    triples = list(map(_RPARTITION_COLON, cell.split(";")))
    if not all(map(_SEP_OF, triples)) or not all(map(_TOPIC_OF, triples)):
        bad = next(t for t in triples if not t[1] or not t[0])
        raise ValueError(f"expected topic:partitions, got {''.join(bad)!r}")
    if "," not in cell:
        if not all(map(_PARTS_OF, triples)):  # "topic:" with no partition
            return [(t, int(p)) for t, _, p in triples if p.strip()]
        return list(zip(map(_TOPIC_OF, triples), map(int, map(_PARTS_OF, triples))))
    for topic, _, parts in triples:
        if parts.strip():
            out.extend(zip(repeat(topic), map(int, parts.split(","))))
    return out


def _columns(header: str) -> list[tuple[str, int]]:
    return [(m.group(0), m.start()) for m in re.finditer(r"\S+", header)]


def _split_row(line: str, columns: list[tuple[str, int]]) -> list[str] | None:
    """Cells of a row by the header's column positions (values are padded to the header's
    widths by printf("%-Ns")), or by whitespace when the row does not line up."""
    starts = [s for _, s in columns]
    # Kafka never leaves the last cell empty (MISSING_COLUMN_VALUE is "-"), so an aligned row
    # reaches the last column.
    if len(line) > starts[-1] and all(s == 0 or line[s - 1] == " " for s in starts):
        return [line[a:b].strip() for a, b in zip(starts, starts[1:] + [len(line)])]
    tokens = line.split()
    if len(tokens) > len(columns) > 0:
        # Only the last cell holds blanks: the ASSIGNMENT of Kafka before 3.x joins topics
        # with ", " (``t1(0), t2(0)``).
        tokens[len(columns) - 1:] = [" ".join(tokens[len(columns) - 1:])]
    if len(tokens) == len(columns):
        return tokens
    return None


@dataclass
class _DescribeRow:
    line_no: int
    cells: dict[str, str]


def parse_describe_text(text: str, source: str, *, group_id: str | None = None) -> LoadedGroup:
    """The text of ``kafka-consumer-groups.sh --describe`` (``--members [--verbose]`` or the
    offsets view) -> the group with its current assignment as ``owned``.

    The text has neither subscriptions nor partition counts: every member is taken as
    subscribed to every topic of the group (as with one ``subscribe()`` call), and a topic's
    partition count is its highest partition seen + 1 (give ``--partitions TOPIC=N`` when the
    last partitions are unassigned). Both assumptions are reported in ``notes``.

    Raises:
        InputError: no header, rows that do not fit the header (with line number), several
            groups without ``group_id``, a member listed twice, a partition listed twice.
    """
    header_cols: list[tuple[str, int]] | None = None
    rows: list[_DescribeRow] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        s = line.strip()
        if is_describe_header(s):
            header_cols = _columns(line)
            continue
        if s.startswith(_DESCRIBE_CHATTER):
            continue
        if header_cols is None:
            raise InputError(
                f"{source}: line {line_no}: expected the header of kafka-consumer-groups.sh --describe "
                "(GROUP, TOPIC or CONSUMER-ID ... CONSUMER-ID ...)"
            )
        cells = _split_row(line, header_cols)
        if cells is None:
            raise InputError(
                f"{source}: line {line_no}: row does not fit the header's {len(header_cols)} columns "
                f"({' '.join(n for n, _ in header_cols)})"
            )
        rows.append(_DescribeRow(line_no, dict(zip((n for n, _ in header_cols), cells))))
    if header_cols is None:
        raise InputError(f"{source}: no GROUP ... CONSUMER-ID header: not kafka-consumer-groups.sh --describe output")
    names = {n for n, _ in header_cols}
    if "GROUP" not in names:
        # Before KIP-379 the text describes one group and does not name it.
        for r in rows:
            r.cells["GROUP"] = group_id or ""
    groups = list(dict.fromkeys(r.cells.get("GROUP", "") for r in rows))
    if group_id is None:
        if len(groups) > 1:
            raise InputError(f"{source}: describes {len(groups)} groups ({_names(groups)}): choose one with --group")
        chosen = groups[0] if groups else None
    else:
        if group_id not in groups:
            raise InputError(f"{source}: group {quote(group_id)} not described (groups: {_names(groups) or 'none'})")
        chosen = group_id
    rows = [r for r in rows if r.cells.get("GROUP") == chosen]
    chosen = chosen or None
    if "TOPIC" in names and "PARTITION" in names:
        loaded = _from_offsets_view(rows, source, chosen)
    else:
        loaded = _from_members_view(rows, names, source, chosen)
    if "GROUP" not in names:
        loaded.notes.insert(0, "the describe text has no GROUP column (kafka-consumer-groups.sh before Kafka 2.4, "
                               "KIP-379): one group" + (f", taken as {quote(group_id)} (--group)" if group_id else ""))
    return loaded


def _from_members_view(rows: list[_DescribeRow], names: set[str], source: str, group_id: str | None) -> LoadedGroup:
    notes: list[str] = []
    if "CURRENT-ASSIGNMENT" in names:
        assignment_column = "CURRENT-ASSIGNMENT"
    elif "ASSIGNMENT" in names:
        assignment_column = "ASSIGNMENT"
    else:
        raise InputError(
            f"{source}: the members view has no assignment column: run kafka-consumer-groups.sh "
            "--describe --members --verbose"
        )
    member_rows: list[tuple[str, str | None, list[TopicPartition]]] = []
    seen: dict[str, int] = {}
    lines: list[int] = []
    for r in rows:
        member_id = r.cells.get("CONSUMER-ID", "")
        if member_id in seen:
            raise InputError(f"{source}: line {r.line_no}: member {quote(member_id)} listed twice (first on line {seen[member_id]})")
        seen[member_id] = r.line_no
        try:
            parts = parse_assignment_cell(r.cells.get(assignment_column, ""))
        except ValueError as exc:
            raise InputError(f"{source}: line {r.line_no}: {assignment_column} of {quote(member_id)}: {exc}") from None
        declared = r.cells.get("#PARTITIONS", "")
        if declared.isdigit() and int(declared) != len(parts):
            notes.append(f"line {r.line_no}: {member_id} has #PARTITIONS {declared} but {len(parts)} listed")
        instance = r.cells.get("GROUP-INSTANCE-ID") or None
        member_rows.append((member_id, instance, parts))
        lines.append(r.line_no)
    all_parts = list(chain.from_iterable(p for _, _, p in member_rows))
    try:
        counts, has_duplicates = _partition_counts(all_parts)
    except ValueError as exc:
        raise InputError(f"{source}: {assignment_column}: {exc}") from None
    if has_duplicates:
        # Someone lists a partition twice: find the first culprit (the slow way, only now).
        owner: dict[TopicPartition, str] = {}
        for (member_id, _, parts), line_no in zip(member_rows, lines):
            for tp in parts:
                other = owner.get(tp)
                if other is not None:
                    raise InputError(
                        f"{source}: line {line_no}: partition {tp[0]}-{tp[1]} assigned to both {quote(other)} and {quote(member_id)}"
                    )
                owner[tp] = member_id
    # Partition counts and subscriptions come from the assignment: the text has neither.
    for column in ("TARGET-ASSIGNMENT",):
        if column in names:
            for r in rows:
                try:
                    for t, p in parse_assignment_cell(r.cells.get(column, "")):
                        if not 0 <= p < INT32_MAX:
                            raise ValueError(f"partition {t}-{quote(p)} out of range (0 to {INT32_MAX - 1:,})")
                        counts[t] = max(counts.get(t, 0), p + 1)
                except ValueError as exc:
                    raise InputError(f"{source}: line {r.line_no}: {column}: {exc}") from None
    topics = {t: TopicSpec(name=t, partitions=counts[t]) for t in sorted(counts)}
    subscribed = tuple(topics)
    members = [
        MemberSpec(member_id=m, topics=subscribed, owned=tuple(parts), instance_id=inst)
        for m, inst, parts in member_rows
    ]
    _check_static_members(members, source)
    if topics:
        notes.append(
            "partition counts inferred from the assignment ("
            + ", ".join(f"{t}: {spec.partitions}" for t, spec in topics.items())
            + "); override with --partitions TOPIC=N"
        )
        notes.append("subscriptions are not in the describe output: every member taken as subscribed to every topic")
    return LoadedGroup(
        group=GroupSpec(topics=topics, members=members), kind="describe-members", group_id=group_id,
        notes=notes, inferred_partitions=True,
    )


def _partition_counts(parts: list[TopicPartition]) -> tuple[dict[str, int], bool]:
    """(topic -> highest partition seen + 1, whether a partition appears twice).

    A described group of 2,000 members x 500 topics lists a million partitions: above a few
    thousand, NumPy does the counting and the duplicate check (a sort) instead of a Python
    loop and a set of a million tuples."""
    if len(parts) < 10_000:
        counts: dict[str, int] = {}
        for t, p in parts:
            if p < 0:
                raise ValueError(f"partition {t}-{p} is negative")
            if p >= INT32_MAX:
                raise ValueError(f"partition {t}-{quote(p)} out of range (0 to {INT32_MAX - 1:,})")
            if p >= counts.get(t, 0):
                counts[t] = p + 1
        return counts, len(set(parts)) != len(parts)
    top_id = max(map(_PARTITION_OF, parts))
    if top_id >= INT32_MAX:  # also keeps every id within NumPy's int64 below
        t, p = next(tp for tp in parts if tp[1] >= INT32_MAX)
        raise ValueError(f"partition {t}-{quote(p)} out of range (0 to {INT32_MAX - 1:,})")
    import numpy as np

    topic_column = list(map(_TOPIC_OF, parts))
    names = list(dict.fromkeys(topic_column))
    index = {t: i for i, t in enumerate(names)}
    ids = np.fromiter(map(index.__getitem__, topic_column), dtype=np.int64, count=len(parts))
    ps = np.fromiter(map(_PARTITION_OF, parts), dtype=np.int64, count=len(parts))
    if len(ps) and int(ps.min()) < 0:
        i = int(np.argmin(ps))
        raise ValueError(f"partition {parts[i][0]}-{parts[i][1]} is negative")
    top = np.zeros(len(names), dtype=np.int64)
    np.maximum.at(top, ids, ps + 1)
    # Partition ids are non-negative int32: (topic, partition) fits one int64 key.
    keys = ids * (int(top.max()) + 1) + ps
    keys.sort()
    duplicates = bool(len(keys) > 1 and (keys[1:] == keys[:-1]).any())
    return dict(zip(names, top.tolist())), duplicates


def _from_offsets_view(rows: list[_DescribeRow], source: str, group_id: str | None) -> LoadedGroup:
    counts: dict[str, int] = {}
    owned: dict[str, list[TopicPartition]] = {}
    owner: dict[TopicPartition, str] = {}
    for r in rows:
        topic = r.cells.get("TOPIC", _MISSING)
        member = r.cells.get("CONSUMER-ID", _MISSING)
        part = r.cells.get("PARTITION", _MISSING)
        if topic == _MISSING or part == _MISSING:
            # A member without partitions (collectConsumerAssignment prints one '-' row).
            if member != _MISSING:
                owned.setdefault(member, [])
            continue
        try:
            p = int(part)
        except ValueError:
            p = -1
        if p < 0 or p >= INT32_MAX:
            raise InputError(f"{source}: line {r.line_no}: PARTITION {quote(part)} is not a partition number")
        counts[topic] = max(counts.get(topic, 0), p + 1)
        if member == _MISSING:
            continue
        tp = (topic, p)
        if tp in owner:
            raise InputError(f"{source}: line {r.line_no}: partition {topic}-{p} listed twice")
        owner[tp] = member
        owned.setdefault(member, []).append(tp)
    topics = {t: TopicSpec(name=t, partitions=counts[t]) for t in sorted(counts)}
    members = [MemberSpec(member_id=m, topics=tuple(topics), owned=tuple(parts)) for m, parts in owned.items()]
    notes = [
        "partition counts inferred from the partitions listed ("
        + ", ".join(f"{t}: {spec.partitions}" for t, spec in topics.items())
        + "); override with --partitions TOPIC=N",
        "subscriptions are not in the describe output: every member taken as subscribed to every topic",
    ]
    return LoadedGroup(
        group=GroupSpec(topics=topics, members=members), kind="describe-offsets", group_id=group_id,
        notes=notes, inferred_partitions=True,
    )


# ---------------------------------------------------------------------------------------------
# Group-metadata records (decode-batch --format jsonl)


@dataclass
class RecordedRound:
    """One GroupMetadata record: the group as the leader saw it and what it assigned."""

    group_id: str
    generation: int
    protocol: str | None
    #: Subscriptions as recorded (owned partitions and generation from the subscription).
    group: GroupSpec
    #: The assignment recorded for each member (in the record's member order).
    recorded: Assignment
    #: Where the record was: line number in the input (and offset when known).
    line: int
    offset: int | None = None
    notes: list[str] = field(default_factory=list)


def _looks_like_records(text: str) -> bool:
    head = text[:4096]
    return '"group_metadata"' in head or "subscriptionDecoded" in head or "subscription_decoded" in head


def _get(d: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for k in keys:
        if k in d:
            return d[k]
    return default


def _iter_json_objects(text: str, source: str) -> Iterable[tuple[int, Any]]:
    stripped = text.lstrip()
    if stripped.startswith("[") or (stripped.startswith("{") and detect_kind(text) == "json"):
        doc = parse_json(text, source)
        if isinstance(doc, list):
            for i, item in enumerate(doc):
                yield i + 1, item
        else:
            yield 1, doc
        return
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        yield line_no, documents.load_json(line, source, line=line_no)


def _group_metadata_value(obj: Any) -> tuple[str | None, Any, int | None] | None:
    """(group id, value, offset) when ``obj`` is a group-metadata record, else None."""
    if not isinstance(obj, Mapping):
        return None
    offset = _get(obj, "offset")
    payload = obj.get("payload")
    if lines.is_record(obj) and isinstance(payload, Mapping):
        # a decode-batch record line (kgtool.codec.lines): its decoded payload
        found = _group_metadata_value(payload)
        return None if found is None else (found[0], found[1], offset if _is_int(offset) else found[2])
    # Kafka's own dump (camelCase, under "offsetsTopic") and kgtool's decode-batch (snake_case).
    for holder_key in ("offsetsTopic", "offsets_topic", "coordinator", "decoded", "record"):
        holder = obj.get(holder_key)
        if isinstance(holder, Mapping):
            found = _group_metadata_value(holder)
            if found is not None:
                return found[0], found[1], offset if found[2] is None else found[2]
    kind = _get(obj, "kind", "record_type_name", "type")
    value = obj.get("value")
    key = obj.get("key")
    if isinstance(value, Mapping) and isinstance(value.get("members"), list) and (
        kind in ("group_metadata", "GroupMetadata", "GroupMetadataValue") or "protocol" in value
    ):
        group = key.get("group") if isinstance(key, Mapping) else None
        return group, value, offset if _is_int(offset) else None
    if "members" in obj and "protocol" in obj and isinstance(obj.get("members"), list):
        return _get(obj, "group", "group_id"), obj, None
    # Any other nesting (e.g. a decode-batch line holding the decoded record under its own key).
    for holder in obj.values():
        if isinstance(holder, Mapping) and ("members" in holder or "value" in holder):
            found = _group_metadata_value(holder)
            if found is not None:
                return found[0], found[1], offset if found[2] is None else found[2]
    return None


def _partitions_list(raw: Any, what: str, where: str) -> list[TopicPartition]:
    """``[{"topic": t, "partitions": [...]}, ...]`` -> [(t, p), ...] in record order."""
    out: list[TopicPartition] = []
    if raw is None:
        return out
    if not isinstance(raw, list):
        raise InputError(f"{where}: {what} must be a list of {{topic, partitions}}")
    for entry in raw:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("topic"), str):
            raise InputError(f"{where}: {what}: bad entry {quote(entry)}")
        parts = entry.get("partitions") or []
        if not isinstance(parts, list) or not all(_is_int(p) for p in parts):
            raise InputError(f"{where}: {what} of {quote(entry['topic'])}: partitions must be integers")
        if parts and (min(parts) < 0 or max(parts) > INT32_MAX - 1):
            bad = next(p for p in parts if p < 0 or p > INT32_MAX - 1)
            raise InputError(
                f"{where}: {what} of {quote(entry['topic'])}: partition {quote(bad)} out of range "
                f"(0 to {INT32_MAX - 1:,})"
            )
        out.extend(zip(repeat(entry["topic"]), parts))
    return out


def load_group_metadata(text: str, source: str, *, group_id: str | None = None) -> list[RecordedRound]:
    """Every GroupMetadata record of a ``decode-batch --format jsonl`` output (or one such
    value as JSON) -> the recorded rounds, in file order.

    The record has no topic metadata: a topic's partition count is its highest partition seen
    in any subscription's owned partitions or any assignment + 1 (``--partitions`` overrides).
    Tombstones and groups without a protocol (Empty) are skipped.

    Raises:
        InputError: no group-metadata record (for ``group_id``), or a record without decoded
            subscriptions.
    """
    rounds: list[RecordedRound] = []
    groups_seen: list[str] = []
    for line_no, obj in _iter_json_objects(text, source):
        found = _group_metadata_value(obj)
        if found is None:
            continue
        gid, value, offset = found
        gid = gid if isinstance(gid, str) else ""
        if gid not in groups_seen:
            groups_seen.append(gid)
        if group_id is not None and gid != group_id:
            continue
        protocol = _get(value, "protocol")
        raw_members = value.get("members") or []
        if protocol is None and not raw_members:
            continue
        where = f"{source}: line {line_no}"
        rounds.append(_round_from_value(gid, value, where, line_no, offset))
    if group_id is None and len(set(r.group_id for r in rounds)) > 1:
        names = _names(dict.fromkeys(r.group_id for r in rounds))
        raise InputError(f"{source}: records of several groups ({names}): choose one with --group")
    if not rounds:
        if group_id is not None:
            raise InputError(
                f"{source}: no group-metadata record with members for group {quote(group_id)} "
                f"(groups: {_names(groups_seen) or 'none'})"
            )
        raise InputError(f"{source}: no group-metadata record with members")
    return rounds


def _round_from_value(gid: str, value: Mapping[str, Any], where: str, line_no: int, offset: int | None) -> RecordedRound:
    generation = _get(value, "generation", default=-1)
    protocol = _get(value, "protocol")
    if protocol is not None and not isinstance(protocol, str):
        raise InputError(f"{where}: protocol must be a string, got {_got(protocol)}")
    members_raw = value.get("members") or []
    parsed: list[tuple[str, tuple[str, ...], list[TopicPartition], int | None, str | None, str | None, list[TopicPartition]]] = []
    counts: dict[str, int] = {}
    for i, m in enumerate(members_raw):
        if not isinstance(m, Mapping):
            raise InputError(f"{where}: members[{i}] is not an object")
        member_id = _get(m, "memberId", "member_id")
        if not isinstance(member_id, str):
            raise InputError(f"{where}: members[{i}] has no member id")
        sub = _get(m, "subscriptionDecoded", "subscription_decoded")
        asg = _get(m, "assignmentDecoded", "assignment_decoded")
        if not isinstance(sub, Mapping):
            raise InputError(f"{where}: member {quote(member_id)}: no decoded subscription (protocol type not 'consumer'?)")
        topics = _get(sub, "topics", default=[]) or []
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise InputError(f"{where}: member {quote(member_id)}: subscription topics must be a list of topic names")
        owned = _partitions_list(_get(sub, "ownedPartitions", "owned_partitions"), "ownedPartitions", where)
        gen = _get(sub, "generationId", "generation_id")
        rack = _get(sub, "rackId", "rack_id")
        user_data = _get(sub, "userData", "user_data")
        user_decoded = _get(sub, "userDataDecoded", "user_data_decoded")
        if protocol == "sticky" and isinstance(user_decoded, Mapping):
            # StickyAssignor (eager) keeps the previous assignment in its user data
            # (StickyAssignor.memberData: STICKY_ASSIGNOR_USER_DATA_V1 previous_assignment + generation).
            owned = _partitions_list(
                _get(user_decoded, "previousAssignment", "previous_assignment"), "previousAssignment", where
            )
            gen = _get(user_decoded, "generation", default=gen)
        elif protocol == "sticky" and user_data:
            owned, gen = _decode_sticky_user_data(user_data, member_id, where, owned, gen)
        assigned = _partitions_list(
            _get(asg, "assignedPartitions", "assigned_partitions") if isinstance(asg, Mapping) else None,
            "assignedPartitions", where,
        )
        for t, p in owned + assigned:
            if p + 1 > counts.get(t, 0):
                counts[t] = p + 1
        instance = _get(m, "groupInstanceId", "group_instance_id")
        for field_name, field_value in (("rackId", rack), ("groupInstanceId", instance)):
            if field_value is not None and not isinstance(field_value, str):
                raise InputError(f"{where}: member {quote(member_id)}: {field_name} must be a string, got {_got(field_value)}")
        if _is_int(gen) and not INT32_MIN <= gen <= INT32_MAX:
            raise InputError(f"{where}: member {quote(member_id)}: generation {quote(gen)} out of range (a 32-bit integer)")
        parsed.append((member_id, tuple(topics), owned, gen if _is_int(gen) else None, rack, instance, assigned))
    all_subscribed = list(dict.fromkeys(t for p in parsed for t in p[1]))
    topics_spec = {t: TopicSpec(name=t, partitions=counts.get(t, 0)) for t in all_subscribed}
    for t in counts:
        topics_spec.setdefault(t, TopicSpec(name=t, partitions=counts[t]))
    notes = []
    zero = [t for t in all_subscribed if t not in counts]
    if zero:
        notes.append(f"no partition of {', '.join(zero)} appears in the record: taken as 0 partitions")
    members = [
        MemberSpec(member_id=mid, topics=tps, owned=tuple(owned), generation=gen, rack=rack, instance_id=inst)
        for mid, tps, owned, gen, rack, inst, _ in parsed
    ]
    recorded = {p[0]: p[6] for p in parsed}
    return RecordedRound(
        group_id=gid, generation=generation if _is_int(generation) else -1, protocol=protocol,
        group=GroupSpec(topics=topics_spec, members=members, assignor=protocol), recorded=recorded,
        line=line_no, offset=offset, notes=notes,
    )


def _decode_sticky_user_data(
    user_data: Any, member_id: str, where: str, owned: list[TopicPartition], gen: Any
) -> tuple[list[TopicPartition], Any]:
    """StickyAssignor user data (base64): ``previous_assignment: [topic: string, partitions:
    [int32]]`` then, in V1, ``generation: int32`` (StickyAssignor.STICKY_ASSIGNOR_USER_DATA_V1).
    A malformed payload is reported, as StickyAssignor.deserializeTopicPartitionAssignment logs
    and ignores it."""
    import base64
    import struct

    try:
        if not isinstance(user_data, str):
            raise ValueError("not text")
        data = base64.b64decode(user_data, validate=True)
    except (ValueError, TypeError):
        raise InputError(f"{where}: member {quote(member_id)}: userData is not base64") from None
    pos = 0

    def take(n: int) -> bytes:
        nonlocal pos
        if n < 0 or pos + n > len(data):
            raise InputError(
                f"{where}: member {quote(member_id)}: StickyAssignor userData: byte {pos}: needs {n} bytes, {len(data) - pos} remain"
            )
        chunk = data[pos : pos + n]
        pos += n
        return chunk

    result: list[TopicPartition] = []
    (n_topics,) = struct.unpack(">i", take(4))
    if n_topics < 0 or n_topics * 6 > len(data):
        raise InputError(f"{where}: member {quote(member_id)}: StickyAssignor userData: bad topic count {n_topics}")
    for _ in range(n_topics):
        (length,) = struct.unpack(">h", take(2))
        try:
            topic = take(length).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{where}: member {quote(member_id)}: StickyAssignor userData: topic is not UTF-8") from None
        (n_parts,) = struct.unpack(">i", take(4))
        if n_parts < 0 or n_parts * 4 > len(data) - pos:
            raise InputError(f"{where}: member {quote(member_id)}: StickyAssignor userData: bad partition count {n_parts}")
        result.extend((topic, p) for p in struct.unpack(f">{n_parts}i", take(4 * n_parts)))
    generation = gen
    if len(data) - pos >= 4:
        (generation,) = struct.unpack(">i", take(4))
    return result, generation
