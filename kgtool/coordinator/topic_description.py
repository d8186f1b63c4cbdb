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

import yaml

from kgtool.errors import InputError

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


def parse_topic_description(text: str, source: str) -> TopicDescription:
    """Parse ``kafka-topics.sh --describe`` text, or a YAML/JSON partition -> leader map.

    Raises:
        InputError: nothing recognisable, a partition listed twice, a non-integer leader.
    """
    if re.search(r"^\s*Topic:", text, re.MULTILINE):
        return _parse_describe_text(text, source)
    return _parse_mapping(text, source)


def _parse_describe_text(text: str, source: str) -> TopicDescription:
    topic = None
    count = None
    leaders: dict[int, int | None] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = _PARTITION_LINE.match(line)
        if m:
            _check_topic(topic, m["topic"], source, lineno)
            topic = m["topic"]
            p = int(m["partition"])
            if p in leaders:
                raise InputError(f"{source}: line {lineno}: partition {p} is described twice")
            leader = m["leader"].lower()
            leaders[p] = None if leader in ("none", "-1") else int(leader)
            continue
        m = _TOPIC_LINE.match(line)
        if m:
            _check_topic(topic, m["topic"], source, lineno)
            topic = m["topic"]
            c = _COUNT.search(line)
            if c:
                count = int(c["count"])
    if not leaders:
        raise InputError(
            f"{source}: no 'Partition: N  Leader: B' lines found; expected the output of "
            "kafka-topics.sh --describe, or a YAML/JSON partition -> leader map"
        )
    return TopicDescription(topic=topic, partition_count=count, leaders=leaders, source=source)


def _check_topic(seen: str | None, topic: str, source: str, lineno: int) -> None:
    if seen is not None and seen != topic:
        raise InputError(
            f"{source}: line {lineno}: describes topic {topic!r} after {seen!r}; "
            "give the description of one topic"
        )


def _parse_mapping(text: str, source: str) -> TopicDescription:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise InputError(f"{source}:{where} not valid YAML/JSON: {getattr(exc, 'problem', exc)}") from None
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
    leaders: dict[int, int | None] = {}
    for key, value in entries:
        p = _as_int(key, f"{source}: partition {key!r}")
        if p < 0:
            raise InputError(f"{source}: partition {p} is negative")
        if p in leaders:
            raise InputError(f"{source}: partition {p} is listed twice")
        if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
            leaders[p] = None
        else:
            leader = _as_int(value, f"{source}: leader of partition {p} ({value!r})")
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
        return int(value)
    raise InputError(f"{what} is not an integer")
