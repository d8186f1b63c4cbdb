"""kgtool's coordinator record declarations equal the specs of every Kafka release it reads.

``fixtures/kafka-specs/kafka-4.X.json`` are the record specs at the release branch heads (4.0
``fb2bc813`` ... 4.4 ``87943b2f``; ``../shared/golden/kafka-specs``). The package ships the same
files and builds its schemas from them; these tests hold that every release's view of kgtool's
declarations (:func:`schema_as_of`) is, field for field, the layout that release's own spec gives,
so a drift in either (a hand edit, a new release's spec copied wrong) fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgtool.coordinator import release_specs as rs
from kgtool.coordinator.schema import Field, decode_message
from kgtool.coordinator.schemas import (
    ALL_SCHEMAS,
    OFFSETS_RECORD_TYPES,
    SHARE_STATE_RECORD_TYPES,
    TRANSACTION_RECORD_TYPES,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kafka-specs"


def fixture_specs(release: str) -> dict:
    return json.loads((FIXTURES / f"kafka-{release}.json").read_text())


def layout(fields: tuple[Field, ...]) -> list:
    """A field tree in comparable form (Field equality already ignores ``since``)."""
    return [(f.name, f.type, str(f.versions), str(f.nullable_versions), f.tag, str(f.tagged_versions),
             repr(f.default), f.ignorable, layout(f.fields)) for f in fields]


@pytest.mark.parametrize("release", rs.RELEASES)
def test_the_package_ships_the_release_specs_unchanged(release):
    assert rs.release_specs(release) == fixture_specs(release)["specs"]
    assert fixture_specs(release)["release"] == release


@pytest.mark.parametrize("release", rs.RELEASES)
def test_each_release_sees_exactly_its_own_layouts(release):
    specs = fixture_specs(release)["specs"]
    keys = {n: rs.schema_from_spec(s) for n, s in specs.items() if n.endswith("Key")}
    declared = rs.declared_schemas()
    for name, spec in specs.items():
        twin = keys.get(name[: -len("Value")] + "Key") if name.endswith("Value") else None
        want = rs.schema_from_spec(spec, api_key=None if twin is None else twin.api_key)
        got = rs.schema_as_of(declared[name], release)
        assert got is not None, f"{name} is in Kafka {release} but kgtool's {release} view lacks it"
        assert (got.api_key, str(got.valid_versions), str(got.flexible_versions)) == (
            want.api_key, str(want.valid_versions), str(want.flexible_versions)), (release, name)
        assert layout(got.fields) == layout(want.fields), (release, name)
    # nothing kgtool declares for this release is missing from its spec table
    extra = {n for n, s in declared.items() if rs.schema_as_of(s, release) is not None} - set(specs)
    assert not extra, f"kgtool declares for Kafka {release} what it does not ship: {sorted(extra)}"


def test_kgtool_declares_nothing_that_no_release_shipped():
    shipped = set().union(*(fixture_specs(r)["specs"] for r in rs.RELEASES))
    assert {s.name for s in ALL_SCHEMAS} == shipped
    # drafts found in code stores, never merged: record types 18 and 24, ConsumerGroupMetadataValue
    # tag 1 (CreationTimeMs), a per-topic CreateTimestamp in ShareGroupStatePartitionMetadataValue
    assert 18 not in OFFSETS_RECORD_TYPES and 24 not in OFFSETS_RECORD_TYPES
    cgm = rs.declared_schema("ConsumerGroupMetadataValue")
    assert [f.name for f in cgm.fields] == ["epoch", "metadata_hash"]
    sgs = rs.declared_schema("ShareGroupStatePartitionMetadataValue")
    assert [f.name for f in sgs.fields[1].fields] == ["topic_id", "topic_name", "partitions"]
    smv = rs.declared_schema("StreamsGroupMetadataValue")
    assert [(f.name, f.tag) for f in smv.fields] == [
        ("epoch", None), ("metadata_hash", None), ("validated_topology_epoch", 0), ("last_assignment_configs", 1),
        ("stored_description_topology_epoch", 2), ("failed_description_topology_epoch", 3)]


def test_the_registries_are_the_spec_pairs_of_each_coordinator():
    def pairs(prefix):
        out = {}
        for r in rs.RELEASES:
            for n, s in fixture_specs(r)["specs"].items():
                if n.endswith("Key") and s["file"].startswith(prefix):
                    out[n[: -len("Key")]] = rs.schema_from_spec(s).api_key
        return out

    offsets = pairs("group-coordinator/")
    offsets.pop("OffsetCommit")  # 4.0's OffsetCommitKey covers types 0 and 1; 4.1+ split them
    assert {rs.camel_to_snake(n): i for n, i in offsets.items()} | {"offset_commit": 1} == {
        t.kind: t.id for t in OFFSETS_RECORD_TYPES.values()}
    assert {t.kind for t in TRANSACTION_RECORD_TYPES.values()} == {"transaction_log"}
    assert {t.kind: t.id for t in SHARE_STATE_RECORD_TYPES.values()} == {"share_snapshot": 0, "share_update": 1}


@pytest.mark.parametrize(
    "spec, field, since",
    [
        ("OffsetCommitValue", "topic_id", "4.1"),
        ("TransactionLogValue", "next_producer_epoch", "4.1"),
        ("ConsumerGroupMetadataValue", "metadata_hash", "4.1"),
        ("StreamsGroupMetadataValue", "validated_topology_epoch", "4.2"),
        ("StreamsGroupMetadataValue", "last_assignment_configs", "4.2"),
        ("StreamsGroupMetadataValue", "stored_description_topology_epoch", "4.4"),
        ("StreamsGroupTargetAssignmentMetadataValue", "assignment_timestamp", "4.3"),
        ("ConsumerGroupTargetAssignmentMetadataValue", "assignment_timestamp", "4.3"),
        ("ShareSnapshotValue", "delivery_complete_count", "4.2"),
        ("OffsetCommitValue", "offset", "4.0"),
    ],
)
def test_each_field_knows_the_release_it_arrived_in(spec, field, since):
    assert next(f for f in rs.declared_schema(spec).fields if f.name == field).since == since


def test_nested_fields_know_their_release_too():
    cma = rs.declared_schema("ConsumerGroupCurrentMemberAssignmentValue")
    epochs = next(f for f in cma.fields[3].fields if f.name == "assignment_epochs")
    assert epochs.since == "4.3"
    tasks = rs.declared_schema("StreamsGroupCurrentMemberAssignmentValue").fields[3]
    assert [(f.name, f.since) for f in tasks.fields] == [
        ("subtopology_id", "4.1"), ("partitions", "4.1"), ("assignment_epochs", "4.2")]


def test_the_early_access_share_layouts_of_4_0_are_kept_apart():
    """Kafka 4.1 changed the 4.0 share-group records incompatibly (KIP-932 left early access):
    4.0's layout is a superseded one, read only by 4.0's view, never merged into 4.1's."""
    snap = rs.declared_schema("ShareSnapshotValue")
    assert [s.until for s in snap.superseded] == ["4.0"]
    old = snap.superseded[0]
    assert [(f.name, f.type) for f in old.fields][:1] == [("snapshot_epoch", "uint16")]
    assert snap.version_since == ((0, "4.1"),)
    # a 4.0 ShareGroupMetadataValue (epoch only) does not read as 4.1's (epoch, metadata hash)
    sgm = rs.declared_schema("ShareGroupMetadataValue")
    body = b"\x00\x00\x00\x07\x00"
    assert decode_message(sgm.superseded[0], 0, body)[0] == {"epoch": 7}
    assert rs.schema_as_of(sgm, "4.0").fields == sgm.superseded[0].fields
    assert rs.schema_as_of(sgm, "4.1").fields == sgm.fields


def test_a_spec_removed_by_a_release_says_so():
    """ShareGroupPartitionMetadata (type 9) is 4.0's only; 4.1+ loaders skip it as unknown."""
    t9 = OFFSETS_RECORD_TYPES[9]
    assert (t9.kind, t9.since, t9.until) == ("share_group_partition_metadata", "4.0", "4.0")
    assert rs.schema_as_of(t9.value, "4.1") is None


def test_json_null_default_is_no_default_and_the_string_null_is_null():
    """FieldSpec: ``"default": null`` is no default (an absent tagged array reads empty)."""
    from kgtool.coordinator.schema import default_value

    smv = rs.declared_schema("StreamsGroupMetadataValue")
    assert default_value(next(f for f in smv.fields if f.name == "last_assignment_configs")) == []
    member = rs.declared_schema("StreamsGroupMemberMetadataValue")
    assert default_value(next(f for f in member.fields if f.name == "user_endpoint")) is None
    cma = rs.declared_schema("ConsumerGroupCurrentMemberAssignmentValue")
    assert default_value(next(f for f in cma.fields[3].fields if f.name == "assignment_epochs")) == []


def test_an_unknown_release_is_refused():
    with pytest.raises(ValueError, match="4.0"):
        rs.release_specs("3.9")
