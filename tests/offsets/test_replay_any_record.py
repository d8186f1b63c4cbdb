"""No record aborts the audit: every ``__consumer_offsets`` record type of Kafka 4.0-4.4, with
random field values and random order, goes through the replay; a record the replay cannot follow
(one Kafka's loader refuses, or one whose values make no sense) marks its group incomplete with
one warning, and the audit goes on to the end."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.codec import encode_batch_v2
from kgtool.coordinator.records import encode_offsets_record
from kgtool.coordinator.schemas import OFFSETS_RECORD_TYPES
from kgtool.offsets.audit import audit_entries
from kgtool.offsets.decode import entries_from_bytes
from kgtool.offsets.shard.views import loaded_view
from tests.coordinator.strategies import message_strategy

GROUPS = ["g0", "g1", "g2"]
MEMBERS = ["m0", "m1"]
TOPICS = ["t0", "t1"]


@st.composite
def record(draw):
    rt = draw(st.sampled_from(sorted(OFFSETS_RECORD_TYPES.values(), key=lambda t: t.id)))
    key = draw(message_strategy(rt.key, 0))
    for name in ("group", "group_id"):
        if name in key:
            key[name] = draw(st.sampled_from(GROUPS))
    if "member_id" in key:
        key["member_id"] = draw(st.sampled_from(MEMBERS))
    if "topic" in key:
        key["topic"] = draw(st.sampled_from(TOPICS))
        key["partition"] = draw(st.integers(0, 2))
    if draw(st.integers(0, 4)) == 0:
        return encode_offsets_record(rt.kind, key, None)
    version = draw(st.integers(rt.value.valid_versions.lowest, rt.value.valid_versions.highest))
    value = draw(message_strategy(rt.value, version))
    return encode_offsets_record(rt.kind, key, value, value_version=version)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(st.lists(record(), min_size=1, max_size=4), min_size=1, max_size=12))
def test_any_sequence_of_any_records_is_audited_to_the_end(batches):
    data = b"".join(
        encode_batch_v2([(k, v, [], 1_700_000_000_000 + i) for k, v in batch], base_offset=i * 10)
        for i, batch in enumerate(batches))
    entries = list(entries_from_bytes(data, source="random.log", log_partition=0))
    result = audit_entries(entries)  # never raises
    (cover,) = result.tables["coverage"]
    assert cover["records"] == sum(len(b) for b in batches)
    shard = result.replays[0].shard
    # every refusal is one warning naming its record and group, and the group says it is incomplete
    refused = [p for p in result.problems if "marked incomplete" in (p.problem or "")]
    assert len(refused) == len(shard.groups.problems)
    for group, offset, why in shard.groups.problems:
        assert any(f"group {group!r} at offset {offset}" in p.problem for p in refused), (group, offset, why)
    # a group that a refused record left incomplete says so in the groups table, unless a later
    # GroupMetadata value replaced it whole (a classic group's record is its whole state)
    groups = {r["group"]: r for r in result.tables["groups"]}
    for gid, g in shard.groups.groups.items():
        if g.incomplete is not None and gid in groups:
            assert groups[gid]["incomplete"] == g.incomplete, gid


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(record(), min_size=1, max_size=30))
def test_the_shard_view_of_any_replayed_state_is_whole(records):
    """The loaded-state view (the describe output) of whatever the replay holds never fails."""
    from kgtool.offsets.partition import PartitionReplay

    data = encode_batch_v2([(k, v, [], 1_700_000_000_000) for k, v in records])
    rp = PartitionReplay(0)
    rp.feed_entries(list(entries_from_bytes(data, source="random.log", log_partition=0)))
    shard = rp.shard.groups
    for gid, g in shard.groups.items():
        view = loaded_view(gid, g, shard)
        assert view["group_id"] == gid and view["type"] in ("classic", "consumer", "share", "streams")
    rp.state_tables()
