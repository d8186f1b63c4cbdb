"""A group record that does not decode, inside a batch whose CRC is valid: one problem naming the
file, the byte and the field; the group marked incomplete in ``groups``; the replay goes on.

Kafka's loader fails the whole partition on such a record (``CoordinatorLoaderImpl``:
"Deserializing record ... failed"); kgtool reports it, skips it and says which group it touches.
The logs are Kafka-made (fixtures/kip848) with one value cut short, re-encoded by kgtool."""

from __future__ import annotations

import struct

import pytest

from kgtool.offsets.audit import audit_entries
from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.entries import PROBLEM
from tests.kip848.golden import SCENARIOS, got_rows, loaded_states, segment
from tests.kip848.relog import record_type, rewrite
from tests.offsets.test_columns import check
from tests.spark.conftest import spark  # noqa: F401 - the shared session fixture

N01 = next(s for s in SCENARIOS if s.name.startswith("n01"))
CURRENT_MEMBER_ASSIGNMENT = 8  # ConsumerGroupCurrentMemberAssignmentKey's record type
MEMBER_METADATA = 5  # ConsumerGroupMemberMetadataKey's


def cut_first(rtype: int, keep: int):
    """An edit that cuts the first value of record type ``rtype`` to ``keep`` bytes."""
    done: list[int] = []

    def edit(key, value):
        if record_type(key) == rtype and value is not None and not done:
            done.append(1)
            return key, value[:keep]
        return key, value

    return edit


def test_a_truncated_assignment_is_one_problem_at_its_byte_and_field(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    # ConsumerGroupCurrentMemberAssignmentValue v0: version, member_epoch, previous_member_epoch,
    # state, then assigned_partitions: cut inside its second topic's partition list
    [(batch, offset)] = rewrite(segment(N01), log, cut_first(CURRENT_MEMBER_ASSIGNMENT, -6))
    data = log.read_bytes()
    entries = list(entries_from_file(str(log), log_partition=0))
    [bad] = [e for e in entries if e.kind == PROBLEM]
    assert (bad.offset, bad.group, bad.record_kind) == (offset, "g-uniform", "consumer_group_current_member_assignment")
    assert bad.problem == (f"record of group 'g-uniform' at offset {offset} (batch@{batch}.records[5]"
                           ".value.assigned_partitions[1].partitions): array count 6 needs at least 24 bytes, "
                           "21 remaining")
    assert data[bad.position] == 6 + 1  # the byte named: the compact array's count (uvarint N + 1)
    check(data)  # the columnar decoder, C and Python, gives the same entries


def test_in_a_compressed_batch_the_batch_and_the_byte_in_the_value_are_named(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    [(batch, offset)] = rewrite(segment(N01), log, cut_first(CURRENT_MEMBER_ASSIGNMENT, -6), compression="gzip")
    [bad] = [e for e in entries_from_file(str(log), log_partition=0) if e.kind == PROBLEM]
    assert bad.position == batch  # the records are not file bytes
    assert bad.problem == (f"record of group 'g-uniform' at offset {offset} (batch@{batch}, "
                           "value.assigned_partitions[1].partitions byte 62): array count 6 needs at least 24 "
                           "bytes, 21 remaining")
    check(log.read_bytes())


def test_the_group_is_marked_incomplete_and_the_replay_goes_on(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    [(_batch, offset)] = rewrite(segment(N01), log, cut_first(CURRENT_MEMBER_ASSIGNMENT, -6))
    result = audit_entries(entries_from_file(str(log), log_partition=0))
    [row] = result.tables["groups"]
    assert row["incomplete"].startswith(f"record of group 'g-uniform' at offset {offset} (batch@")
    assert row["incomplete"].endswith("the record was skipped, so the group lacks what it changed")
    # every later record was replayed: the group's epoch and end state are Kafka's
    *_, (_line, groups, _offsets) = loaded_states(N01)
    assert (row["state"], row["group_epoch"], row["record_offset"]) == (
        groups["g-uniform"]["state"], groups["g-uniform"]["group_epoch"], 76)
    assert result.tables["coverage"][0]["problems"] == 1
    assert [p.offset for p in result.problems] == [offset]


def test_a_member_metadata_value_that_does_not_decode(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    rewrite(segment(N01), log, cut_first(MEMBER_METADATA, 9))  # inside instance_id / rack_id
    result = audit_entries(entries_from_file(str(log), log_partition=0))
    [bad] = result.problems
    assert bad.group == "g-uniform" and "(batch@" in bad.problem and ".value." in bad.problem
    assert [r["group"] for r in result.tables["groups"] if r["incomplete"]] == ["g-uniform"]


def test_a_value_version_kafka_does_not_know_marks_the_group(tmp_path):
    """Kafka's loader fails on it (CoordinatorRecordSerde.readMessage), unlike an unknown type."""
    log = tmp_path / "00000000000000000000.log"
    done: list[int] = []

    def edit(key, value):
        if record_type(key) == MEMBER_METADATA and value is not None and not done:
            done.append(1)
            return key, struct.pack(">h", 99) + value[2:]
        return key, value

    rewrite(segment(N01), log, edit)
    result = audit_entries(entries_from_file(str(log), log_partition=0))
    [bad] = result.problems
    assert bad.problem.endswith(".value): unknown ConsumerGroupMemberMetadataValue version 99 (known 0)")
    assert bad.record_kind == "consumer_group_member_metadata"
    assert [r["group"] for r in result.tables["groups"] if r["incomplete"]] == ["g-uniform"]


def test_a_key_that_does_not_decode_names_no_group(tmp_path):
    log = tmp_path / "00000000000000000000.log"

    def edit(key, value):
        if record_type(key) == MEMBER_METADATA:
            return key[:5], value  # the group id's length, then nothing
        return key, value

    rewrite(segment(N01), log, edit)
    entries = list(entries_from_file(str(log), log_partition=0))
    bad = [e for e in entries if e.kind == PROBLEM]
    assert bad and all(e.group is None and ".key" in e.problem for e in bad)
    check(log.read_bytes())


def test_unchanged_logs_have_no_incomplete_group():
    for scenario in SCENARIOS:
        result = audit_entries(entries_from_file(segment(scenario), log_partition=0))
        assert not [r for r in result.tables["groups"] if r["incomplete"]], scenario.name
        assert got_rows(result.tables)  # (the state itself: test_state_tables)


@pytest.mark.spark
def test_spark_audit_reports_it_once_and_exits_1(spark, tmp_path):  # noqa: F811
    """End to end: one warning on stderr (file, byte, field), the group's ``incomplete`` in the
    groups table, the rest of the audit as usual, exit status 1."""
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from kgtool.cli.main import app

    log = tmp_path / "logs" / "__consumer_offsets-0" / "00000000000000000000.log"
    log.parent.mkdir(parents=True)
    [(batch, offset)] = rewrite(segment(N01), log, cut_first(CURRENT_MEMBER_ASSIGNMENT, -6))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["spark-audit", str(tmp_path / "logs"), "--master", "local[1]", "--out", str(out)])
    assert result.exit_code == 1, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {log}: byte 550: record of group 'g-uniform' at offset {offset} "
                        f"(batch@{batch}.records[5].value.assigned_partitions[1].partitions): array count 6 needs "
                        "at least 24 bytes, 21 remaining"]
    assert "1 decode problem reported" in result.stderr
    [row] = pq.read_table(out / "groups").to_pylist()
    assert row["group"] == "g-uniform" and row["incomplete"].startswith(f"record of group 'g-uniform' at offset {offset}")
    [cov] = pq.read_table(out / "coverage").to_pylist()
    assert cov["problems"] == 1 and cov["consumer_group_records"] == 46


def test_a_record_kafkas_loader_refuses_is_one_warning(tmp_path):
    """Every record decodes, but the first member's current-assignment tombstone is gone: its
    metadata tombstone then comes while the member still holds an epoch, which
    ``GroupMetadataManager.replay`` refuses (IllegalStateException: the partition would not
    load). One problem naming the record and why, the group incomplete, the replay goes on."""
    log = tmp_path / "00000000000000000000.log"
    done: list[int] = []

    def drop_first_assignment_tombstone(key, value):
        if record_type(key) == CURRENT_MEMBER_ASSIGNMENT and value is None and not done:
            done.append(1)
            return None
        return key, value

    rewrite(segment(N01), log, drop_first_assignment_tombstone)
    result = audit_entries(entries_from_file(str(log), log_partition=0))
    [bad] = result.problems
    assert bad.kind == PROBLEM and bad.group == "g-uniform" and bad.record_kind == "consumer_group_member_metadata"
    assert "before its current assignment's tombstone (Kafka's loader refuses it)" in bad.problem
    [row] = result.tables["groups"]
    assert row["incomplete"] is not None and "Kafka's loader refuses it" in row["incomplete"]
    assert result.tables["coverage"][0]["problems"] == 1
