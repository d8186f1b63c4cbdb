"""``kgtool.assignors.group_input``: described groups in every input form, and bad input."""

from __future__ import annotations

import base64
import json
import re
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.assignors import group_input as gi
from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec
from kgtool.errors import InputError
from tests.assignors.golden import group_from_golden, load_cases

ROOT = Path(__file__).resolve().parents[2]
SCENARIO1 = ROOT / "fixtures" / "offsets" / "scenario1_generations" / "decode.jsonl"

ISSUE_YAML = """\
assignor: cooperative-sticky        # or --assignor on the command line
topics:
  orders: 6                         # partition count
  payments: {partitions: 3, racks: [[r1, r2], [r2, r3], [r3, r1]]}   # replica racks
members:
  - id: consumer-1
    topics: [orders, payments]
    owned: {orders: [0, 1]}         # partitions owned in the previous generation
    generation: 4
    rack: r1
    instance_id: null               # group.instance.id for static members
  - id: consumer-2
    topics: [orders]
    instance_id: static-2
"""


def load(text: str, **kw):
    return gi.load_group(text, "g.yaml", **kw)


def test_issue_shape_yaml():
    loaded = load(ISSUE_YAML)
    assert loaded.kind == "yaml"
    assert loaded.group == GroupSpec(
        topics={
            "orders": TopicSpec("orders", 6),
            "payments": TopicSpec("payments", 3, (("r1", "r2"), ("r2", "r3"), ("r3", "r1"))),
        },
        members=[
            MemberSpec("consumer-1", ("orders", "payments"), (("orders", 0), ("orders", 1)), 4, "r1", None),
            MemberSpec("consumer-2", ("orders",), (), None, None, "static-2"),
        ],
        assignor="cooperative-sticky",
    )


def test_same_group_as_json():
    import yaml

    doc = yaml.safe_load(ISSUE_YAML)
    loaded = gi.load_group(json.dumps(doc), "g.json")
    assert loaded.kind == "json"
    assert loaded.group == load(ISSUE_YAML).group


@pytest.mark.parametrize(
    "name", ["range", "roundrobin", "sticky", "cooperative_sticky", "server_uniform", "server_range", "exact_examples"]
)
def test_every_golden_input_parses_like_the_test_loader(name):
    # The golden shape (owned as [[topic, p]], instanceId) goes through the same parser.
    for case in load_cases(name):
        loaded = gi.load_group(json.dumps(case["input"]), case["name"])
        assert loaded.group == group_from_golden(case["input"]), case["name"]


def test_owned_order_is_kept():
    text = 'topics: {a: 3, b: 2}\nmembers: [{id: m, topics: [a, b], owned: [[b, 1], [a, 2], [a, 0]]}]'
    assert load(text).group.members[0].owned == (("b", 1), ("a", 2), ("a", 0))


def test_owned_may_include_a_topic_no_longer_subscribed():
    text = "topics: {a: 3, b: 2}\nmembers: [{id: m, topics: [a], owned: {b: [0]}}]"
    assert load(text).group.members[0].owned == (("b", 0),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("topics: {a: 1}\nmembers: [{id: m, topics: [a]}, {id: m, topics: [a]}]", "g.yaml: duplicate member 'm'"),
        ("topics: {a: 1}\nmembers: [{id: m, topics: [a, x]}]", "g.yaml: member 'm' subscribes to unknown topic 'x'"),
        ("topics: {a: 1}\nmembers: [{id: m, topics: [a], owned: {x: [0]}}]",
         "g.yaml: member 'm' owns partitions of unknown topic 'x'"),
        ("topics: {a: 3}\nmembers: [{id: m, topics: [a], owned: {a: [0, 3]}}]",
         "g.yaml: member 'm': owned partition a-3 out of range (a has 3 partitions)"),
        ("topics: {a: 3}\nmembers: [{id: m, topics: [a], owned: {a: [-1]}}]",
         "g.yaml: member 'm': owned partition a--1 out of range (a has 3 partitions)"),
        ("topics: {a: 3}\nmembers: [{id: m, topics: [a], owned: {a: [1, 2, 1]}}]",
         "g.yaml: member 'm' owns partition a-1 twice"),
        ("topics: {a: 3}\nmembers: [{id: m, topics: [a], owned: [[a, 1], [a, 1]]}]",
         "g.yaml: member 'm' owns partition a-1 twice"),
        ("topics: {a: 3}\nmembers: [{id: m, topics: [a, a]}]", "g.yaml: member 'm' subscribes to 'a' twice"),
        ("topics: {a: 3}\nmembers: [{id: m, topic: [a]}]", "g.yaml: members[0]: unknown key(s) topic"),
        ("topic: {a: 3}\nmembers: []", "g.yaml: unknown key(s) topic (expected assignor, group, group_id, members, topics)"),
        ("members: []", "g.yaml: missing 'topics'"),
        ("topics: {a: x}\nmembers: []", "g.yaml: topics['a']: expected a partition count or {partitions: N, racks: [...]}, got 'x'"),
        ("topics: {a: {partitions: 2, racks: [[r1]]}}\nmembers: []",
         "g.yaml: topics['a'].racks: must list the replica racks of each of its 2 partitions, got 1"),
        ("topics: {a: 1}\nmembers: [{id: 1, topics: [a]}]", "g.yaml: members[0].id: expected a member id (a string), got 1"),
        ("topics: {a: 1}\nmembers: [{id: m, topics: [a], generation: x}]",
         "g.yaml: members[0].generation: expected a generation (an integer), got 'x'"),
        ("topics: {a: 1}\nmembers: [{id: m, topics: [a], instance_id: s}, {id: n, topics: [a], instance_id: s}]",
         "g.yaml: members 'm' and 'n' share the group.instance.id 's'"),
        ("[1, 2]", "g.yaml: expected a mapping with 'topics' and 'members', got a list"),
        ("topics: {a: -1}\nmembers: []", "g.yaml: topics['a']: partition count -1 out of range (0 to 2,147,483,647)"),
    ],
)
def test_bad_input_names_the_culprit(text, message):
    with pytest.raises(InputError) as exc:
        load(text)
    assert str(exc.value) == message


def test_malformed_yaml_names_the_line():
    # kgtool's part: the file, the place, "malformed YAML", the line the unclosed construct
    # started on. What the parser says of it is its own (libyaml: "did not find expected ','
    # or ']'"; PyYAML's pure-Python parser: "expected ',' or ']', but got ':'").
    text = "topics:\n  a: 3\nmembers:\n  - id: m\n    topics: [a\n  - id: n\n"
    with pytest.raises(InputError) as exc:
        load(text)
    assert re.fullmatch(r"g\.yaml: line 6 column 7: malformed YAML: [^\n]+ \(while [^\n]+ started on line 5\)", str(exc.value))


def test_malformed_json_names_the_line():
    with pytest.raises(InputError) as exc:
        gi.load_group('{"topics": {"a": 1},\n "members": [,]}', "g.json")
    assert str(exc.value) == "g.json: line 2 column 14: malformed JSON: Expecting value"


def test_detect_kind():
    assert gi.detect_kind(ISSUE_YAML) == "yaml"
    assert gi.detect_kind('  {"topics": {}}') == "json"
    assert gi.detect_kind('{"a": 1}\n{"b": 2}\n') == "jsonl"
    assert gi.detect_kind("\nGROUP  CONSUMER-ID  HOST  CLIENT-ID  #PARTITIONS\n") == "describe"


# -- kafka-consumer-groups.sh --describe --members [--verbose] text


def java_members_text(group: str, rows: list[dict], verbose: bool = True) -> str:
    """ConsumerGroupCommand.printMembers (tools/, 4.x), transcribed: the same widths and
    printf formats, to produce the text the parser must read."""
    def assignment_string(parts):
        by = {}
        for t, p in parts:
            by.setdefault(t, []).append(p)
        return ";".join(sorted(t + ":" + ",".join(str(p) for p in sorted(ps)) for t, ps in by.items()))

    max_group, max_cid, max_gi, max_host, max_client, max_cur, max_tgt = 15, 15, 17, 15, 15, 20, 20
    include_gi = False
    for r in rows:
        max_group = max(max_group, len(group))
        max_cid = max(max_cid, len(r["id"]))
        max_gi = max(max_gi, len(r.get("instance", "")))
        max_host = max(max_host, len(r["host"]))
        max_client = max(max_client, len(r["client"]))
        include_gi = include_gi or bool(r.get("instance", ""))
        max_cur = max(max_cur, len(assignment_string(r["current"]) if r["current"] else "-"))
        max_tgt = max(max_tgt, len(assignment_string(r.get("target", [])) if r.get("target") else "-"))

    def left(v, w):
        return str(v).ljust(w)

    out = "\n"
    if include_gi:
        out += " ".join([left("GROUP", max_group), left("CONSUMER-ID", max_cid), left("GROUP-INSTANCE-ID", max_gi),
                         left("HOST", max_host), left("CLIENT-ID", max_client), left("#PARTITIONS", 15)]) + " "
    else:
        out += " ".join([left("GROUP", max_group), left("CONSUMER-ID", max_cid), left("HOST", max_host),
                         left("CLIENT-ID", max_client), left("#PARTITIONS", 15)]) + " "
    if verbose:
        out += " ".join([left("CURRENT-EPOCH", 15), left("CURRENT-ASSIGNMENT", max_cur), left("TARGET-EPOCH", 15),
                         left("TARGET-ASSIGNMENT", max_tgt)])
    out += "\n"
    for r in rows:
        cells = [left(group, max_group), left(r["id"], max_cid)]
        if include_gi:
            cells.append(left(r.get("instance", ""), max_gi))
        cells += [left(r["host"], max_host), left(r["client"], max_client), left(len(r["current"]), 15)]
        out += " ".join(cells) + " "
        if verbose:
            out += " ".join([
                left(r.get("epoch", "-"), 15),
                left(assignment_string(r["current"]) if r["current"] else "-", max_cur),
                left(r.get("target_epoch", "-"), 15),
                left(assignment_string(r.get("target", [])) if r.get("target") else "-", max_tgt),
            ])
        out += "\n"
    return out


ROWS = [
    {"id": "consumer-1-5f0c3a2e-8d1b-4c55-9a7e-1d2f3a4b5c6d", "host": "/10.0.0.1", "client": "consumer-1",
     "current": [("orders", 0), ("orders", 1), ("payments", 2)], "instance": ""},
    {"id": "consumer-2-aa", "host": "/10.0.0.2", "client": "client with spaces",
     "current": [("orders", 2), ("orders", 3), ("orders", 4)], "instance": "static-2"},
    {"id": "consumer-3-bb", "host": "/10.0.0.3", "client": "consumer-3", "current": []},
]


def test_describe_members_verbose_4x_with_instance_ids():
    text = java_members_text("orders-service", ROWS)
    loaded = gi.load_group(text, "describe.txt")
    assert loaded.kind == "describe-members"
    assert loaded.group_id == "orders-service"
    g = loaded.group
    # Partition counts from the highest partition seen; everyone subscribed to everything.
    assert g.topics == {"orders": TopicSpec("orders", 5), "payments": TopicSpec("payments", 3)}
    assert [m.member_id for m in g.members] == [r["id"] for r in ROWS]
    assert [m.owned for m in g.members] == [tuple(r["current"]) for r in ROWS]
    assert [m.instance_id for m in g.members] == [None, "static-2", None]
    assert {m.topics for m in g.members} == {("orders", "payments")}
    assert loaded.inferred_partitions and any("inferred" in n for n in loaded.notes)


def test_describe_members_4x_consumer_protocol_epochs_and_target():
    rows = [dict(r, instance="", epoch=7, target_epoch=8, target=r["current"] + ([("orders", 9)] if i == 2 else []))
            for i, r in enumerate(ROWS)]
    loaded = gi.load_group(java_members_text("g", rows), "d.txt")
    # TARGET-ASSIGNMENT mentions orders-9: the topic has at least 10 partitions.
    assert loaded.group.topics["orders"].partitions == 10
    assert [m.owned for m in loaded.group.members] == [tuple(r["current"]) for r in ROWS]


def test_describe_members_3x_assignment_column():
    # As in Kafka's operations documentation (3.x: one ASSIGNMENT column, topic(partitions)).
    text = """
GROUP           CONSUMER-ID                                    HOST            CLIENT-ID       #PARTITIONS     ASSIGNMENT
my-group        consumer1-3fc8d6f1-581a-4472-bdf3-3515b4aee8c1 /127.0.0.1      consumer1       2               topic1(0), topic2(0)
my-group        consumer4-117fe4d3-c6c1-4178-8ee9-eb4a3954bee0 /127.0.0.1      consumer4       1               topic3(2)
my-group        consumer2-e76ea8c3-5d30-4299-9005-47eb41f3d3c4 /127.0.0.1      consumer2       3               topic2(1), topic3(0,1)
my-group        consumer3-ecea43e4-1f01-479f-8349-f9130b75d8ee /127.0.0.1      consumer3       0               -
"""
    loaded = gi.load_group(text, "d.txt")
    owned = {m.member_id.split("-")[0]: m.owned for m in loaded.group.members}
    assert owned == {
        "consumer1": (("topic1", 0), ("topic2", 0)),
        "consumer4": (("topic3", 2),),
        "consumer2": (("topic2", 1), ("topic3", 0), ("topic3", 1)),
        "consumer3": (),
    }
    assert {t: s.partitions for t, s in loaded.group.topics.items()} == {"topic1": 1, "topic2": 2, "topic3": 3}


def test_describe_non_verbose_members_view_is_refused():
    text = java_members_text("g", ROWS, verbose=False)
    with pytest.raises(InputError, match="no assignment column: run kafka-consumer-groups.sh --describe --members --verbose"):
        gi.load_group(text, "d.txt")


def test_describe_offsets_view():
    text = """
Consumer group 'my-group' has no active members.

GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID
my-group        topic1          0          854144          855809          1665            consumer1-aa    /127.0.0.1      consumer1
my-group        topic1          1          854144          855809          1665            consumer2-bb    /127.0.0.1      consumer2
my-group        topic2          0          460537          803290          342753          consumer1-aa    /127.0.0.1      consumer1
my-group        topic3          2          594218          594218          0               -               -               -
my-group        -               -          -               -               -               consumer3-cc    /127.0.0.1      consumer3
"""
    loaded = gi.load_group(text, "d.txt")
    assert loaded.kind == "describe-offsets"
    assert {t: s.partitions for t, s in loaded.group.topics.items()} == {"topic1": 2, "topic2": 1, "topic3": 3}
    assert {m.member_id: m.owned for m in loaded.group.members} == {
        "consumer1-aa": (("topic1", 0), ("topic2", 0)),
        "consumer2-bb": (("topic1", 1),),
        "consumer3-cc": (),
    }


def test_describe_several_groups_needs_a_choice():
    text = java_members_text("g1", ROWS[:1]) + java_members_text("g2", ROWS[1:])
    with pytest.raises(InputError, match=r"describes 2 groups \(g1, g2\): choose one with --group"):
        gi.load_group(text, "d.txt")
    loaded = gi.load_group(text, "d.txt", group_id="g2")
    assert [m.member_id for m in loaded.group.members] == [ROWS[1]["id"], ROWS[2]["id"]]
    with pytest.raises(InputError, match="group 'g3' not described"):
        gi.load_group(text, "d.txt", group_id="g3")


def test_describe_bad_rows():
    text = java_members_text("g", ROWS[:1]).rstrip("\n") + "\ng  short\n"
    with pytest.raises(InputError, match=r"d.txt: line 4: row does not fit the header's 9 columns"):
        gi.load_group(text, "d.txt")
    dup = java_members_text("g", [ROWS[0], dict(ROWS[1], current=[("orders", 1)])])
    with pytest.raises(InputError, match=r"partition orders-1 assigned to both"):
        gi.load_group(dup, "d.txt")


@pytest.mark.parametrize(
    ("cell", "parts"),
    [
        ("-", []),
        ("orders:0,1;payments:2", [("orders", 0), ("orders", 1), ("payments", 2)]),
        ("orders(0,1),payments(2)", [("orders", 0), ("orders", 1), ("payments", 2)]),
        ("a.b_c-d(10)", [("a.b_c-d", 10)]),
    ],
)
def test_assignment_cells(cell, parts):
    assert gi.parse_assignment_cell(cell) == parts


topic_names = st.from_regex(r"[a-zA-Z0-9._-]{1,12}", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(topic_names, st.lists(st.integers(0, 5000), min_size=1, max_size=8, unique=True), max_size=6))
def test_assignment_cell_round_trip_both_layouts(by_topic):
    parts = sorted((t, p) for t, ps in by_topic.items() for p in ps)
    new = ";".join(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(by_topic.items())) or "-"
    old = ",".join(f"{t}({','.join(str(p) for p in sorted(ps))})" for t, ps in sorted(by_topic.items())) or "-"
    assert sorted(gi.parse_assignment_cell(new)) == parts
    assert sorted(gi.parse_assignment_cell(old)) == parts


# -- group-metadata records (decode-batch --format jsonl; Kafka's own dump for the golden)


def test_group_metadata_rounds_of_scenario1():
    rounds = gi.load_group_metadata(SCENARIO1.read_text(), "decode.jsonl")
    assert [r.generation for r in rounds] == [1, 2, 3, 4, 5]
    assert {r.protocol for r in rounds} == {"cooperative-sticky"}
    r2 = rounds[1]
    a = r2.group.member("consumerA-1111")
    # Subscriptions carry ownedPartitions and the previous generation (ConsumerProtocol v3).
    assert a.owned == tuple(("orders", p) for p in range(6)) + tuple(("payments", p) for p in range(3))
    assert a.generation == 1
    assert r2.group.member("consumerB-2222").rack == "use1-az1"
    assert r2.recorded == {"consumerA-1111": [("orders", 0), ("orders", 1), ("orders", 2), ("payments", 0),
                                              ("payments", 1)], "consumerB-2222": []}
    assert rounds[2].group.member("consumerC-3333").instance_id == "orders-static-c"
    assert {t: s.partitions for t, s in r2.group.topics.items()} == {"orders": 6, "payments": 3}


def test_group_metadata_current_state_is_the_last_round():
    loaded = gi.load_group(SCENARIO1.read_text(), "decode.jsonl")
    assert loaded.kind == "group-metadata" and loaded.group_id == "orders-service"
    assert loaded.group.assignor == "cooperative-sticky"
    assert {m.member_id: (m.owned, m.generation) for m in loaded.group.members} == {
        "consumerB-2222": ((("orders", 0), ("orders", 2), ("payments", 0)), 5),
        "consumerD-4444": ((), 5),
        "consumerC-3333": ((("orders", 1), ("payments", 1), ("payments", 2)), 5),
    }


def _snake(obj):
    import re

    if isinstance(obj, dict):
        return {re.sub(r"(?<!^)([A-Z])", r"_\1", k).lower(): _snake(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_snake(v) for v in obj]
    return obj


def test_group_metadata_snake_case_like_kgtool_decode_batch():
    lines = [json.loads(line) for line in SCENARIO1.read_text().splitlines() if line.strip()]
    text = "\n".join(json.dumps(_snake(o)) for o in lines)
    snake = gi.load_group_metadata(text, "x")
    camel = gi.load_group_metadata(SCENARIO1.read_text(), "x")
    assert [(r.generation, r.group, r.recorded) for r in snake] == [(r.generation, r.group, r.recorded) for r in camel]


def test_group_metadata_wrong_group():
    with pytest.raises(InputError, match=r"no group-metadata record with members for group 'nope' \(groups: orders-service\)"):
        gi.load_group_metadata(SCENARIO1.read_text(), "x", group_id="nope")


def test_sticky_user_data_is_the_previous_assignment():
    # StickyAssignor.STICKY_ASSIGNOR_USER_DATA_V1: [topic, [partitions]] then generation.
    raw = struct.pack(">i", 2) + struct.pack(">h", 1) + b"a" + struct.pack(">i2i", 2, 3, 1)
    raw += struct.pack(">h", 1) + b"b" + struct.pack(">i", 0) + struct.pack(">i", 7)
    value = {"protocol": "sticky", "generation": 8, "members": [{
        "memberId": "m", "subscriptionDecoded": {"topics": ["a", "b"], "userData": base64.b64encode(raw).decode(),
                                                 "ownedPartitions": [], "generationId": -1},
        "assignmentDecoded": {"assignedPartitions": [{"topic": "a", "partitions": [0, 1, 2, 3]}]},
    }]}
    (r,) = gi.load_group_metadata(json.dumps({"kind": "group_metadata", "key": {"group": "g"}, "value": value}), "x")
    assert r.group.members[0].owned == (("a", 3), ("a", 1))
    assert r.group.members[0].generation == 7
    truncated = dict(value)
    truncated["members"] = [json.loads(json.dumps(value["members"][0]))]
    truncated["members"][0]["subscriptionDecoded"]["userData"] = base64.b64encode(raw[:25]).decode()
    with pytest.raises(InputError, match=r"StickyAssignor userData: byte 22: needs 4 bytes, 3 remain"):
        gi.load_group_metadata(json.dumps({"kind": "group_metadata", "key": {"group": "g"}, "value": truncated}), "x")


def test_group_metadata_as_kgtool_decodes_it():
    # kgtool.coordinator.records (to_json: snake_case, subscription_decoded / assignment_decoded),
    # nested in a decode-batch line, gives the same rounds as Kafka's own dump.
    from kgtool.coordinator.records import decode_offsets_record

    lines = []
    for line in SCENARIO1.read_text().splitlines():
        o = json.loads(line)
        if o.get("type") != "record":
            continue
        value = None if o["value"] is None else base64.b64decode(o["value"])
        rec = decode_offsets_record(base64.b64decode(o["key"]), value)
        lines.append(json.dumps({"offset": o["offset"], "decoded": rec.to_json()}))
    ours = gi.load_group_metadata("\n".join(lines), "x")
    kafka = gi.load_group_metadata(SCENARIO1.read_text(), "x")
    assert [(r.generation, r.offset, r.group, r.recorded) for r in ours] == [
        (r.generation, r.offset, r.group, r.recorded) for r in kafka]


def test_partition_counts_large_path_equals_the_loop():
    import random

    rnd = random.Random(7)
    parts = sorted({(f"t{rnd.randrange(60)}", rnd.randrange(5000)) for _ in range(30_000)})
    rnd.shuffle(parts)
    expected: dict[str, int] = {}
    for t, p in parts:
        expected[t] = max(expected.get(t, 0), p + 1)
    assert gi._partition_counts(parts) == (expected, False)
    assert gi._partition_counts(parts + [parts[12345]]) == (expected, True)
    small = parts[:100]
    assert gi._partition_counts(small) == ({t: max(p for tt, p in small if tt == t) + 1 for t, _ in small}, False)
    assert gi._partition_counts(small + small[:1])[1] is True


def test_negative_partitions_are_refused():
    text = java_members_text("g", [dict(ROWS[0], current=[("orders", -1)])]).replace("orders:-1", "orders:-1")
    with pytest.raises(InputError, match=r"d.txt: CURRENT-ASSIGNMENT: partition orders--1 is negative"):
        gi.load_group(text, "d.txt")
    big = [(f"t{i % 7}", i) for i in range(20_000)] + [("t3", -5)]
    with pytest.raises(ValueError, match="partition t3--5 is negative"):
        gi._partition_counts(big)


# -- wrong types are named by their path, partition counts are bounded


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a topic given as a map or a list in `owned`
        ("topics: {t: 1}\nmembers:\n  - id: m\n    topics: [t]\n    owned: [[{a: 1}, 0]]\n",
         "g.yaml: members[0].owned[0][0]: expected a topic name (a string), got a mapping"),
        ('{"topics": {"t": 1}, "members": [{"id": "m", "topics": ["t"], "owned": [[["t"], 0]]}]}',
         "g.yaml: members[0].owned[0][0]: expected a topic name (a string), got a list"),
        ("topics: {t: 1}\nmembers: [{id: m, topics: [t], owned: [[t, x]]}]",
         "g.yaml: members[0].owned[0][1]: expected a partition number (an integer), got 'x'"),
        ("topics: {t: 1}\nmembers: [{id: m, topics: [t], owned: [[t, true]]}]",
         "g.yaml: members[0].owned[0][1]: expected a partition number (an integer), got true (a boolean)"),
        ("topics: {t: 1}\nmembers: [{id: m, topics: [t], owned: [t]}]",
         "g.yaml: members[0].owned[0]: expected [topic, partition], got 't'"),
        ("topics: {t: 2}\nmembers: [{id: m, topics: [t], owned: {t: [0, [1]]}}]",
         "g.yaml: members[0].owned['t'][1]: expected a partition number (an integer), got a list"),
        ("topics: {t: 2}\nmembers: [{id: m, topics: [t], owned: {t: 0}}]",
         "g.yaml: members[0].owned['t']: expected a list of partition numbers, got 0"),
        ("topics: {t: 2}\nmembers: [{id: m, topics: [t], owned: {1: [0]}}]",
         "g.yaml: members[0].owned: expected topic names (strings) as keys, got 1"),
        ("topics: {t: 2}\nmembers: [{id: m, topics: [t], owned: t}]",
         "g.yaml: members[0].owned: expected {topic: [partitions]} or [[topic, partition], ...], got 't'"),
        ("topics: {t: 2}\nmembers: [{id: m, topics: [t, {a: 1}]}]",
         "g.yaml: members[0].topics[1]: expected a topic name (a string), got a mapping"),
        ("topics: {t: 2}\nmembers: [{id: m, topics: {t: 1}}]",
         "g.yaml: members[0].topics: expected a list of topic names, got a mapping"),
        ("topics: {t: 2}\nmembers: [{member_id: [m], topics: [t]}]",
         "g.yaml: members[0].member_id: expected a member id (a string), got a list"),
        ("topics: {t: 2}\nmembers: [{id: m, topics: [t], generation: 2147483648}]",
         "g.yaml: members[0].generation: 2147483648 out of range (a 32-bit integer)"),
        ("topics: {t: 2}\nmembers: [{id: m, topics: [t], rack: [r1]}]",
         "g.yaml: members[0].rack: expected a string, got a list"),
        ("topics: {t: 2}\nmembers: [{id: m, topics: [t], instanceId: 5}]",
         "g.yaml: members[0].instanceId: expected a string, got 5"),
        ("topics: {t: {partitions: 1, racks: [r1]}}\nmembers: []",
         "g.yaml: topics['t'].racks[0]: expected a list of rack names, got 'r1'"),
        ("topics: {t: {partitions: 1, racks: [[r1, 2]]}}\nmembers: []",
         "g.yaml: topics['t'].racks[0][1]: expected a rack name (a string), got 2"),
        ("topics: {t: {partitions: 1, racks: {a: 1}}}\nmembers: []",
         "g.yaml: topics['t'].racks: expected a list of the replica racks of each partition, got a mapping"),
        ("topics: {t: {partitions: [1]}}\nmembers: []",
         "g.yaml: topics['t'].partitions: expected a partition count (an integer), got a list"),
        ("topics: [t]\nmembers: []", "g.yaml: topics: expected a mapping of topic name -> partition count, got a list"),
        ("topics: {t: 1}\nmembers: {m: 1}", "g.yaml: members: expected a list of members, got a mapping"),
        ("topics: {t: 1}\nmembers: [m]", "g.yaml: members[0]: expected a mapping with 'id' and 'topics', got 'm'"),
        ("assignor: [range]\ntopics: {}\nmembers: []", "g.yaml: assignor: expected a string, got a list"),
        ("group_id: {a: 1}\ntopics: {}\nmembers: []", "g.yaml: group_id: expected a string, got a mapping"),
        ("", "g.yaml: expected a mapping with 'topics' and 'members', got an empty document"),
    ],
)
def test_wrong_types_are_named_by_their_field_path(text, message):
    with pytest.raises(InputError) as exc:
        load(text)
    assert str(exc.value) == message


def test_messages_quote_input_cut_short():
    member = "m" * 100_000
    text = f"topics: {{t: 1}}\nmembers: [{{id: {member}, topics: [x]}}]"
    with pytest.raises(InputError) as exc:
        load(text)
    assert "subscribes to unknown topic 'x'" in str(exc.value) and len(str(exc.value)) < 200


@pytest.mark.parametrize(
    "text",
    [
        "topics:\n  t: 1000000000\nmembers:\n  - id: a\n    topics: [t]\n",  # a billion partitions
        "topics: {a: 600000, b: 400001}\nmembers: []",
    ],
)
def test_more_partitions_than_the_limit_are_refused_before_assigning(text):
    with pytest.raises(InputError, match=r"partitions in all \(topic '.' has [\d,]+\): more than --max-partitions 1,000,000"):
        load(text)


def test_partition_limit_is_exact_and_adjustable():
    text = "topics: {a: 600000, b: 400000}\nmembers: []"
    assert sum(s.partitions for s in load(text).group.topics.values()) == gi.DEFAULT_MAX_PARTITIONS
    with pytest.raises(InputError, match="more than --max-partitions 999,999"):
        load(text, max_partitions=999_999)


def test_partition_limit_applies_to_inferred_counts():
    # The describe text and group-metadata records give counts as the highest partition + 1.
    text = java_members_text("g1", [{"id": "c1", "host": "/h", "client": "c", "current": [("t", 1_999_999)]}])
    with pytest.raises(InputError, match="2,000,000 partitions in all"):
        gi.load_group(text, "d.txt")
    assert gi.load_group(text, "d.txt", max_partitions=2_000_000).group.topics["t"].partitions == 2_000_000


def test_partition_ids_past_int32_are_refused_in_describe_text():
    # Above 10,000 partitions the counting runs in NumPy int64: 20 digits must not overflow it.
    parts = [("t", p) for p in range(10_000)] + [("t", 10**20)]
    with pytest.raises(ValueError, match=r"partition t-100000000000000000000 out of range \(0 to 2,147,483,646\)"):
        gi._partition_counts(parts)
    with pytest.raises(ValueError, match="out of range"):
        gi._partition_counts([("t", 2**31 - 1)])


# -- kafka-consumer-groups.sh before KIP-379 (Kafka 2.4): no GROUP column


def scala_2x_describe_text(rows: list[dict], view: str) -> str:
    """ConsumerGroupCommand.printOffsets / printMembers of Kafka 2.0-2.3 (core/.../admin,
    Scala), transcribed: widths max(15, longest value), no GROUP column; the members view's
    ASSIGNMENT joins ``topic(p,p)`` with ", "."""
    def left(v, w):
        return str(v).ljust(w)

    if view == "offsets":
        t_w = max([15] + [len(r["topic"]) for r in rows])
        c_w = max([15] + [len(r["id"]) for r in rows])
        h_w = max([15] + [len(r["host"]) for r in rows])
        out = "\n" + " ".join([left("TOPIC", t_w), left("PARTITION", 10), left("CURRENT-OFFSET", 15),
                               left("LOG-END-OFFSET", 15), left("LAG", 15), left("CONSUMER-ID", c_w),
                               left("HOST", h_w), "CLIENT-ID"]) + "\n"
        for r in rows:
            out += " ".join([left(r["topic"], t_w), left(r["partition"], 10), left(5, 15), left(9, 15), left(4, 15),
                             left(r["id"], c_w), left(r["host"], h_w), r["client"]]) + "\n"
        return out
    c_w = max([15] + [len(r["id"]) for r in rows])
    h_w = max([15] + [len(r["host"]) for r in rows])
    k_w = max([15] + [len(r["client"]) for r in rows])
    out = "\n" + " ".join([left("CONSUMER-ID", c_w), left("HOST", h_w), left("CLIENT-ID", k_w),
                           left("#PARTITIONS", 15)]) + " ASSIGNMENT\n"
    for r in rows:
        by: dict[str, list[int]] = {}
        for t, p in r["current"]:
            by.setdefault(t, []).append(p)
        cell = ", ".join(sorted(t + "(" + ",".join(map(str, sorted(ps))) + ")" for t, ps in by.items())) or "-"
        out += " ".join([left(r["id"], c_w), left(r["host"], h_w), left(r["client"], k_w),
                         left(len(r["current"]), 15)]) + " " + cell + "\n"
    return out


def test_describe_members_2x_without_group_column():
    text = "Warning: Consumer group 'g' is rebalancing.\n" + scala_2x_describe_text(ROWS, "members")
    assert gi.detect_kind(text) == "describe"
    loaded = gi.load_group(text, "d.txt")
    assert loaded.kind == "describe-members" and loaded.group_id is None
    assert [m.owned for m in loaded.group.members] == [tuple(r["current"]) for r in ROWS]
    assert loaded.notes[0].startswith("the describe text has no GROUP column")
    # --group names it (there is nothing to choose from).
    assert gi.load_group(text, "d.txt", group_id="orders").group_id == "orders"


def test_describe_offsets_2x_without_group_column():
    rows = [
        {"topic": "orders", "partition": 0, "id": "consumer-1-aa", "host": "/10.0.0.1", "client": "consumer-1"},
        {"topic": "orders", "partition": 2, "id": "consumer-2-bb", "host": "/10.0.0.2", "client": "consumer-2"},
        {"topic": "orders", "partition": 1, "id": "-", "host": "-", "client": "-"},
    ]
    loaded = gi.load_group(scala_2x_describe_text(rows, "offsets"), "d.txt")
    assert loaded.kind == "describe-offsets"
    assert {m.member_id: m.owned for m in loaded.group.members} == {
        "consumer-1-aa": (("orders", 0),), "consumer-2-bb": (("orders", 2),),
    }
    assert loaded.group.topics["orders"].partitions == 3


def test_describe_row_not_aligned_keeps_blanks_of_the_last_cell():
    text = ("CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT\n"
            "c1 /10.0.0.1 c1 2 topic1(0), topic2(0)\n")
    (m,) = gi.load_group(text, "d.txt").group.members
    assert m.owned == (("topic1", 0), ("topic2", 0))
