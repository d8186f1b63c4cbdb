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
        ("[1, 2", "not valid YAML"),
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
