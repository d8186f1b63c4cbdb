"""One model of a classic group: the shard's ClassicGroup (offsets/shard/) is what the
generations, members and rebalances tables and commit attribution read (offsets/generations.py),
so the tables that overlap say the same thing.

A v0 GroupMetadata member has no RebalanceTimeout (a v1+ field, default -1) and Kafka loads it as
its session timeout (``GroupMetadataManager.replay(GroupMetadataKey, GroupMetadataValue)``:
``rebalanceTimeout() == -1 ? sessionTimeout() : rebalanceTimeout()``, Kafka 4.0 and 4.4 alike).
"""

from __future__ import annotations

import os

import pytest

from kgtool.offsets.entries import GROUP_METADATA
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.partition import PartitionReplay
from kgtool.offsets.scenario import Script
from kgtool.offsets.tables import TABLE_NAMES, member_dicts
from kgtool.offsets.decode import entries_from_bytes, entries_from_file
from kgtool.offsets.writer import encode_event, write_segment
from kgtool.spark.task import PartitionFiles, audit_partition
from tests.offsets.test_rebalances import PATHS

SESSION = 10_000


def audit(tmp_path, s: Script, pure: bool | None = None) -> dict:
    """The script as a real segment, audited by the Spark task's own function (no Spark)."""
    d = os.path.join(str(tmp_path), f"__consumer_offsets-{s.log_partition}")
    path = write_segment(s, d)
    got: dict = {name: [] for name in TABLE_NAMES}

    def sink(name, table):
        got[name].extend(table.to_pylist() if hasattr(table, "to_pylist") else table)

    audit_partition(PartitionFiles(s.log_partition, [path], [os.path.getsize(path)]), AuditOptions(), sink=sink,
                    pure=pure)
    return got


def old_members(version: int, rebalance_timeout: int = 300_000) -> Script:
    """Two generations of group g written with GroupMetadataValue ``version``, then a v3 one."""
    s = Script()
    s.generation("g", 1, {"a-1": [("t", 0), ("t", 1)]}, at=0, session_timeout=SESSION,
                 rebalance_timeout=rebalance_timeout)
    s.generation("g", 2, {"a-1": [("t", 0)], "b-1": [("t", 1)]}, at=60_000, session_timeout=SESSION,
                 rebalance_timeout=rebalance_timeout)
    for ev in s.events:
        ev.records[0].value_version = version
    s.generation("g", 3, {"a-1": [("t", 0), ("t", 1)]}, at=120_000, session_timeout=SESSION, rebalance_timeout=45_000)
    return s


def test_a_v0_record_has_no_rebalance_timeout(tmp_path):
    """kgtool's writer writes a v0 value without the field, and the decoder reads none: the
    fallback is the replay's."""
    path = write_segment(old_members(0), str(tmp_path / "__consumer_offsets-0"))
    first = next(e for e in entries_from_file(path, log_partition=0) if e.kind == GROUP_METADATA)
    (m,) = first.value["members"]
    assert first.value_version == 0 and "rebalance_timeout" not in m and m["session_timeout"] == SESSION


@pytest.mark.parametrize("pure", PATHS)
@pytest.mark.parametrize("version,rebalance_timeout", [(0, 300_000), (1, -1)], ids=["v0", "v1-minus-one"])
def test_rebalance_timeout_is_one_value_everywhere(tmp_path, pure, version, rebalance_timeout):
    t = audit(tmp_path, old_members(version, rebalance_timeout), pure=pure)
    members = sorted(t["members"] if isinstance(t["members"][0], dict) else member_dicts(t["members"]),
                     key=lambda r: (r["record_offset"], r["member_id"]))
    assert [(r["generation_id"], r["member_id"], r["rebalance_timeout_ms"]) for r in members] == [
        (1, "a-1", SESSION), (2, "a-1", SESSION), (2, "b-1", SESSION), (3, "a-1", 45_000)]
    # the state at the end (group_members) and the history (members) agree where they overlap
    (gm,) = t["group_members"]
    last = members[-1]
    for col, state_col in (("member_id", "member_id"), ("group_instance_id", "instance_id"),
                           ("client_id", "client_id"), ("client_host", "client_host"),
                           ("session_timeout_ms", "session_timeout_ms"),
                           ("rebalance_timeout_ms", "rebalance_timeout_ms"),
                           ("subscribed_topics", "subscribed_topic_names"), ("assigned_partitions", "assigned")):
        assert last[col] == gm[state_col], col
    rebalances = sorted(t["rebalances"], key=lambda r: r["record_offset"])
    assert [r["rebalance_timeout_ms"] for r in rebalances] == [SESSION, SESSION, 45_000]
    assert [r["session_timeout_ms"] for r in rebalances] == [SESSION] * 3


def test_generations_read_the_shards_group():
    """The generation in effect holds the shard's members (one parse of the record), and its
    owners are the shard's decoded assignment."""
    s = old_members(3)
    r = PartitionReplay(0, pure=True)
    data, offset = b"", 0
    for ev in s.events:
        data += encode_event(ev, offset)
        offset += len(ev.records)
    r.feed_entries(list(entries_from_bytes(data, source="seg", log_partition=0)))
    group = r.shard.groups.group("g")
    gen = r.groups["g"].gen
    assert gen.member_info is group.members
    assert gen.owners == {tp: (mid,) for mid, m in group.members.items() for tp in m.protocol.assigned}
    assert group.members["a-1"].assigned == [("t", 0), ("t", 1)]
    assert group.listed_members[0] is group.members["a-1"]


@pytest.mark.parametrize("pure", PATHS)
def test_members_and_group_members_agree_on_rack_and_assignment(tmp_path, pure):
    """The last generation's members (the history) and group_members (the state at the end) give
    one answer for a member's rack (its ConsumerProtocol v3 subscription, KIP-881), for empty
    assignment bytes (a member that has not synced: it holds nothing, ``[]``) and for a partition
    the assignment lists twice (listed once, as every partition list of the audit)."""
    s = Script()
    s.generation("g", 1, {"a-1": [("t", 0)], "b-1": [], "c-1": [("t", 1), ("t", 1), ("t", 2)]}, at=0,
                 topics=["t"])
    members = s.events[-1].records[0].value["members"]
    members[0]["subscription_decoded"]["rack_id"] = "rack-a"
    members[1].pop("assignment_decoded")
    members[1]["assignment"] = b""
    t = audit(tmp_path, s, pure=pure)
    rows = t["members"] if isinstance(t["members"][0], dict) else member_dicts(t["members"])
    history = {r["member_id"]: (r["rack_id"], r["assigned_partitions"]) for r in rows}
    state = {r["member_id"]: (r["rack_id"], r["assigned"]) for r in t["group_members"]}
    assert history == state == {"a-1": ("rack-a", ["t-0"]), "b-1": (None, []), "c-1": (None, ["t-1", "t-2"])}
