"""Which broker leads each partition of an internal topic, from a file a user has at hand.

Accepted forms:

- the text that ``kafka-topics.sh --describe --topic __consumer_offsets`` prints
  (``TopicCommand.PartitionDescription``): a topic line
  ``Topic: __consumer_offsets  TopicId: ...  PartitionCount: 50  ...`` and one line per
  partition ``Topic: __consumer_offsets  Partition: 0  Leader: 1  Replicas: 1,2,3  Isr: ...``,
  where ``Leader: none`` (or ``-1``) means the partition has no leader;
- YAML or JSON: a mapping ``partition -> leader`` (``{0: 1, 1: 2}``), or
  ``{topic: NAME, partitions: {0: 1, ...}}``, or ``{partitions: [{partition: 0, leader: 1}, ...]}``.
  A leader of ``null``, ``none`` or ``-1`` means no leader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgtool.documents import load_yaml_or_json, quote
from kgtool.errors import InputError

#: Partition ids and counts are int32 in Kafka (offsets.topic.num.partitions is an int):
#: a partition id is at most 2**31 - 2, a count at most 2**31 - 1.
INT32_MAX = 2**31 - 1
#: Default of ``coordinator-of --max-partitions``: the most partitions a description may list
#: (one dict entry each) and the most a histogram may show (one row each). Kafka's default
#: offsets.topic.num.partitions is 50; a cluster with more than a few thousand is unheard of.
DEFAULT_MAX_PARTITIONS = 1_000_000

_TOPIC_LINE = re.compile(r"^\s*Topic:\s*(?P<topic>\S+)\s+(?:TopicId:|PartitionCount:)")
_COUNT = re.compile(r"PartitionCount:\s*(?P<count>\d+)")
_PARTITION_LINE = re.compile(
    r"^\s*Topic:\s*(?P<topic>\S+)\s+Partition:\s*(?P<partition>\d+)\s+Leader:\s*(?P<leader>-?\d+|none)",
    re.IGNORECASE,
)


@dataclass
class TopicDescription:
    """Leaders by partition; ``None`` for a partition without a leader."""

    topic: str | None
    partition_count: int | None
    leaders: dict[int, int | None]
    source: str

    def leader_of(self, partition: int) -> int | None:
        return self.leaders.get(partition)


def parse_topic_description(
    text: str, source: str, *, max_partitions: int = DEFAULT_MAX_PARTITIONS
) -> TopicDescription:
    """Parse ``kafka-topics.sh --describe`` text, or a YAML/JSON partition -> leader map.

    Args:
        max_partitions: the most partitions the description may list (``--max-partitions``).

    Raises:
        InputError: nothing recognisable, a partition listed twice, a non-integer leader, a
            partition id, count or leader out of Kafka's int32 range, more than
            ``max_partitions`` partitions listed; malformed or hostile YAML/JSON
            (:mod:`kgtool.documents`).
    """
    if re.search(r"^\s*Topic:", text, re.MULTILINE):
        return _parse_describe_text(text, source, max_partitions)
    return _parse_mapping(text, source, max_partitions)


def _bounded_int(digits: str, low: int, high: int, what: str, where: str) -> int:
    """``int(digits)`` within ``low..high``; the length is checked first (int() of 5,000
    digits is refused by Python, of a million it is slow)."""
    value = int(digits) if len(digits.lstrip("-")) <= 12 else None
    if value is None or not low <= value <= high:
        raise InputError(f"{where}: {what} {quote(digits, 40)} out of range ({low:,} to {high:,})")
    return value


def _too_many(source: str, max_partitions: int) -> InputError:
    return InputError(
        f"{source}: describes more than --max-partitions {max_partitions:,} partitions "
        "(raise it if this machine has the memory)"
    )


def _parse_describe_text(text: str, source: str, max_partitions: int) -> TopicDescription:
    topic = None
    count = None
    leaders: dict[int, int | None] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = _PARTITION_LINE.match(line)
        if m:
            where = f"{source}: line {lineno}"
            _check_topic(topic, m["topic"], source, lineno)
            topic = m["topic"]
            p = _bounded_int(m["partition"], 0, INT32_MAX - 1, "partition", where)
            if p in leaders:
                raise InputError(f"{where}: partition {p} is described twice")
            leader = m["leader"].lower()
            # Broker ids are int32 node.id values (>= 0); -1 / none: no leader.
            leaders[p] = None if leader in ("none", "-1") else _bounded_int(leader, 0, INT32_MAX, "leader", where)
            if len(leaders) > max_partitions:
                raise _too_many(source, max_partitions)
            continue
        m = _TOPIC_LINE.match(line)
        if m:
            _check_topic(topic, m["topic"], source, lineno)
            topic = m["topic"]
            c = _COUNT.search(line)
            if c:
                count = _bounded_int(c["count"], 1, INT32_MAX, "PartitionCount", f"{source}: line {lineno}")
    if not leaders:
        raise InputError(
            f"{source}: no 'Partition: N  Leader: B' lines found; expected the output of "
            "kafka-topics.sh --describe, or a YAML/JSON partition -> leader map"
        )
    return TopicDescription(topic=topic, partition_count=count, leaders=leaders, source=source)


def _check_topic(seen: str | None, topic: str, source: str, lineno: int) -> None:
    if seen is not None and seen != topic:
        raise InputError(
            f"{source}: line {lineno}: describes topic {quote(topic)} after {quote(seen)}; "
            "give the description of one topic"
        )


def _parse_mapping(text: str, source: str, max_partitions: int) -> TopicDescription:
    doc = load_yaml_or_json(text, source)
    topic = None
    if isinstance(doc, dict) and "partitions" in doc:
        topic = doc.get("topic")
        if topic is not None and not isinstance(topic, str):
            raise InputError(f"{source}: 'topic' must be a string")
        doc = doc["partitions"]
    entries: list[tuple[object, object]]
    if isinstance(doc, dict):
        entries = list(doc.items())
    elif isinstance(doc, list):
        entries = []
        for i, item in enumerate(doc):
            if not isinstance(item, dict) or "partition" not in item or "leader" not in item:
                raise InputError(f"{source}: partitions[{i}] must be {{partition: N, leader: B}}")
            entries.append((item["partition"], item["leader"]))
    else:
        raise InputError(
            f"{source}: expected kafka-topics.sh --describe output or a partition -> leader "
            f"mapping, found {type(doc).__name__}"
        )
    if len(entries) > max_partitions:
        raise _too_many(source, max_partitions)
    leaders: dict[int, int | None] = {}
    for key, value in entries:
        p = _as_int(key, f"{source}: partition {quote(key)}")
        if p < 0:
            raise InputError(f"{source}: partition {p} is negative")
        if p > INT32_MAX - 1:
            raise InputError(f"{source}: partition {quote(p)} out of range (0 to {INT32_MAX - 1:,})")
        if p in leaders:
            raise InputError(f"{source}: partition {p} is listed twice")
        if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
            leaders[p] = None
        else:
            leader = _as_int(value, f"{source}: leader of partition {p} ({quote(value)})")
            if not -1 <= leader <= INT32_MAX:
                raise InputError(f"{source}: leader of partition {p}: {quote(leader)} out of range (-1 to {INT32_MAX:,})")
            leaders[p] = None if leader == -1 else leader
    if not leaders:
        raise InputError(f"{source}: the partition -> leader map is empty")
    return TopicDescription(topic=topic, partition_count=None, leaders=leaders, source=source)


def _as_int(value: object, what: str) -> int:
    if isinstance(value, bool):
        raise InputError(f"{what} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        digits = value.strip()
        if len(digits.lstrip("-")) > 12:  # past int32 anyway; int() of 5,000 digits raises
            raise InputError(f"{what} out of range (a 32-bit integer)")
        return int(digits)
    raise InputError(f"{what} is not an integer")
