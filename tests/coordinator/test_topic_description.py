"""Topic descriptions: kafka-topics.sh --describe text and YAML/JSON leader maps."""

from __future__ import annotations

import pytest

from kgtool.coordinator.topic_description import parse_topic_description
from kgtool.errors import InputError

DESCRIBE = """\
Topic: __consumer_offsets\tTopicId: 3Mw6sCYwQYKq2h6vQ0Vf7g\tPartitionCount: 4\tReplicationFactor: 3\tConfigs: compression.type=producer,cleanup.policy=compact,segment.bytes=104857600
\tTopic: __consumer_offsets\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \tLastKnownElr: 
\tTopic: __consumer_offsets\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3,1\tElr: \tLastKnownElr: 
\tTopic: __consumer_offsets\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr: \tElr: \tLastKnownElr: 
\tTopic: __consumer_offsets\tPartition: 3\tLeader: -1\tReplicas: 3,1,2\tIsr: \tElr: \tLastKnownElr: 
"""


def test_kafka_topics_describe_text():
    d = parse_topic_description(DESCRIBE, "desc.txt")
    assert d.topic == "__consumer_offsets"
    assert d.partition_count == 4
    assert d.leaders == {0: 1, 1: 2, 2: None, 3: None}


def test_older_describe_layout_without_topic_id():
    text = (
        "Topic:__consumer_offsets\tPartitionCount:2\tReplicationFactor:1\tConfigs:\n"
        "\tTopic: __consumer_offsets\tPartition: 0\tLeader: 5\tReplicas: 5\tIsr: 5\n"
        "\tTopic: __consumer_offsets\tPartition: 1\tLeader: 6\tReplicas: 6\tIsr: 6\n"
    )
    d = parse_topic_description(text, "d")
    assert d.partition_count == 2 and d.leaders == {0: 5, 1: 6}


@pytest.mark.parametrize(
    "text",
    [
        "0: 1\n1: 2\n2: null\n",
        '{"0": 1, "1": 2, "2": -1}',
        "topic: __consumer_offsets\npartitions: {0: 1, 1: 2, 2: none}\n",
        "partitions:\n  - {partition: 0, leader: 1}\n  - {partition: 1, leader: 2}\n  - {partition: 2, leader: null}\n",
    ],
)
def test_mapping_forms(text):
    d = parse_topic_description(text, "m.yaml")
    assert d.leaders == {0: 1, 1: 2, 2: None}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2", "malformed YAML"),
        ("just words", "expected kafka-topics.sh"),
        ("0: x\n", "leader of partition 0"),
        ("{}", "empty"),
        ("-1: 3\n", "negative"),
        (DESCRIBE + DESCRIBE.splitlines()[1] + "\n", "described twice"),
        ("Topic: __consumer_offsets\tPartitionCount: 1\n", "no 'Partition: N"),
    ],
)
def test_bad_descriptions(text, message):
    with pytest.raises(InputError, match=message):
        parse_topic_description(text, "bad")


def test_two_topics_in_one_file_is_an_error():
    text = DESCRIBE + "\tTopic: other\tPartition: 9\tLeader: 1\tReplicas: 1\tIsr: 1\n"
    with pytest.raises(InputError, match="describes topic 'other'"):
        parse_topic_description(text, "d")


# -- fuzz campaign defects 13-16


def describe_with(count_line: str, partitions: list[str]) -> str:
    head = f"Topic: __consumer_offsets\tTopicId: Jb1xuX3kT1ObYvb0vg8q4g\t{count_line}\tReplicationFactor: 3\tConfigs:\n"
    return head + "".join(
        f"\tTopic: __consumer_offsets\tPartition: {p}\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\n" for p in partitions
    )


def test_a_huge_partition_count_is_kept_without_a_table():
    # Defect 13: legal for the lookup (offsets.topic.num.partitions is an int), no per-partition memory.
    d = parse_topic_description(describe_with("PartitionCount: 2147483647", ["0", "1"]), "d.txt")
    assert d.partition_count == 2**31 - 1 and d.leaders == {0: 1, 1: 1}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # Defect 13: a partition of 1e20 was blamed on --partitions, an option nobody gave.
        (describe_with("", ["0", "100000000000000000000"]),
         "d.txt: line 3: partition '100000000000000000000' out of range (0 to 2,147,483,646)"),
        (describe_with("", ["0", "9" * 5000]), "d.txt: line 3: partition '9999999999"),
        (describe_with("PartitionCount: 2147483648", ["0"]),
         "d.txt: line 1: PartitionCount '2147483648' out of range (1 to 2,147,483,647)"),
        (describe_with("PartitionCount: 0", ["0"]), "d.txt: line 1: PartitionCount '0' out of range"),
        ("\tTopic: __consumer_offsets\tPartition: 0\tLeader: -5\tReplicas: 1\n", "d.txt: line 1: leader '-5' out of range"),
        ("{1000000000000: 1}", "d.txt: partition 1000000000000 out of range (0 to 2,147,483,646)"),
        ('{"' + "1" * 5000 + '": 1}', "out of range (a 32-bit integer)"),
        ("{0: 99999999999}", "d.txt: leader of partition 0: 99999999999 out of range"),
    ],
)
def test_numbers_out_of_kafka_int32_range_name_the_file(text, message):
    with pytest.raises(InputError) as exc:
        parse_topic_description(text, "d.txt")
    assert message in str(exc.value) and len(str(exc.value)) < 200


def test_partitions_listed_are_bounded_by_max_partitions():
    text = describe_with("PartitionCount: 5", ["0", "1", "2", "3", "4"])
    assert len(parse_topic_description(text, "d", max_partitions=5).leaders) == 5
    with pytest.raises(InputError, match="d: describes more than --max-partitions 4 partitions"):
        parse_topic_description(text, "d", max_partitions=4)
    with pytest.raises(InputError, match="more than --max-partitions 2"):
        parse_topic_description("{0: 1, 1: 1, 2: 1}", "d", max_partitions=2)


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, '{"partitions": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "partitions: " + "{a: " * 20_000 + "1" + "}" * 20_000],
)
def test_deep_descriptions_are_input_errors(text):
    # Defect 14: RecursionError, exit 3.
    with pytest.raises(InputError, match="nested deeper than 100 levels"):
        parse_topic_description(text, "d")


def test_billion_laughs_description_is_refused_with_a_short_message():
    # Defect 15: 291 bytes printed a 226 MB error line; the 9-level one ran out of memory.
    lines = ["a: &a [x,x,x,x,x,x,x,x,x]"]
    for prev, cur in zip("abcdefghi", "bcdefghij"):
        lines.append(f"{cur}: &{cur} [{','.join([f'*{prev}'] * 9)}]")
    text = "\n".join(lines) + "\npartitions: {0: *j}\n"
    with pytest.raises(InputError) as exc:
        parse_topic_description(text, "d.yaml")
    assert "more than 5,000,000 values" in str(exc.value) and len(str(exc.value)) < 200


def test_a_non_integer_leader_is_quoted_short():
    with pytest.raises(InputError) as exc:
        parse_topic_description("{0: [" + ", ".join(["x"] * 100_000) + "]}", "d")
    assert str(exc.value).startswith("d: leader of partition 0 (['x', 'x'") and len(str(exc.value)) < 200
