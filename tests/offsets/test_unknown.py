"""What the schemas do not know is counted in the coverage and shown, never an error: a record
type Kafka does not define (``CoordinatorLoaderImpl`` skips it: "Unknown record type ...
Ignoring it") and a tagged field a schema does not know (Kafka's generated readers keep it as a
``RawTaggedField``)."""

from __future__ import annotations

import struct

from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.codec.batch import encode_batch_v2
from kgtool.coordinator.records import encode_offsets_record
from kgtool.offsets.audit import audit_entries
from kgtool.offsets.decode import entries_from_bytes
from kgtool.offsets.entries import UNKNOWN
from tests.offsets.test_columns import check

T0 = 1_717_171_200_000
TAG_99 = [{"tag": 99, "data": b"\x01\x02\x03"}]  # a tag no version of the schemas has


def _member_metadata(extra: list | None) -> tuple[bytes, bytes | None]:
    value = {"rack_id": None, "client_id": "c1", "client_host": "/10.0.0.1", "subscribed_topic_names": ["orders"],
             "rebalance_timeout_ms": 300000, "server_assignor": "uniform"}
    if extra:
        value["_unknown_tagged_fields"] = extra
    return encode_offsets_record("consumer_group_member_metadata", {"group_id": "g", "member_id": "m1"}, value)


def log_bytes() -> bytes:
    """Four batches: a plain commit; a record of type 99 (Kafka defines 0-24); a member's metadata
    with tag 99 in its value; an OffsetCommitValue v4 (flexible) with tag 99."""
    commit = encode_offsets_record("offset_commit", {"group": "g", "topic": "orders", "partition": 0},
                                   {"offset": 10, "leader_epoch": 1, "metadata": "", "commit_timestamp": T0})
    unknown = (struct.pack(">h", 99) + b"\x00\x01g", struct.pack(">h", 0) + b"future")
    tagged_commit = encode_offsets_record(
        "offset_commit", {"group": "g", "topic": "orders", "partition": 1},
        {"offset": 20, "leader_epoch": 1, "metadata": "", "commit_timestamp": T0, "_unknown_tagged_fields": TAG_99},
        value_version=4)
    out = b""
    for i, (k, v) in enumerate([commit, unknown, _member_metadata(TAG_99), tagged_commit]):
        out += encode_batch_v2([(k, v, [], T0 + i)], base_offset=i)
    return out


def test_decoded_entries_carry_them():
    entries = list(entries_from_bytes(log_bytes(), source="seg.log", log_partition=3))
    assert [e.kind for e in entries] == ["offset_commit", UNKNOWN, "consumer_group_member_metadata", "offset_commit"]
    assert [e.unknown_tagged_fields for e in entries] == [0, 0, 1, 1]
    assert not [e for e in entries if e.problem]
    check(log_bytes())  # the columnar decoder (C and Python) sends both tagged records the rare way


def test_coverage_counts_them_and_the_replay_uses_the_records():
    result = audit_entries(entries_from_bytes(log_bytes(), source="seg.log", log_partition=3))
    [cov] = result.tables["coverage"]
    assert (cov["unknown_record_types"], cov["unknown_tagged_fields"], cov["problems"]) == (1, 2, 0)
    assert (cov["records"], cov["offset_commits"], cov["consumer_group_records"], cov["other_records"]) == (4, 2, 1, 0)
    assert sorted((r["partition"], r["offset"]) for r in result.tables["offsets"]) == [(0, 10), (1, 20)]
    [member] = result.tables["group_members"]
    assert (member["member_id"], member["client_id"], member["subscribed_topic_names"]) == ("m1", "c1", ["orders"])
    assert not result.problems


def test_a_log_without_them_counts_zero():
    k, v = _member_metadata(None)
    entries = entries_from_bytes(encode_batch_v2([(k, v, [], T0)]), source="seg.log", log_partition=3)
    [cov] = audit_entries(entries).tables["coverage"]
    assert (cov["unknown_record_types"], cov["unknown_tagged_fields"]) == (0, 0)


def _fake_run(monkeypatch, unknown_types: int, unknown_tags: int):
    from kgtool.spark import job, session

    def fake_run(_spark, files, options, **kw):
        coverage = [{"log_partition": 3, "records": 4, "first_offset": 0, "last_offset": 3, "offsets_absent": 0,
                     "first_timestamp": T0, "last_timestamp": T0 + 3, "groups": 1, "problems": 0,
                     "unknown_record_types": unknown_types, "unknown_tagged_fields": unknown_tags}]
        return job.AuditSummary(out=None, files=1, bytes=100, splits=1, coverage=coverage,
                                counts={"generations": 0, "members": 0, "commits": 2, "findings": 0, "offsets": 2},
                                groups=1, findings_by_rule={}, worst_groups=[], findings=[], problems=[],
                                problem_count=0, options={"until": None})

    monkeypatch.setattr(session, "get_session", lambda *a, **k: None)
    monkeypatch.setattr(job, "run_audit", fake_run)


def _console(monkeypatch, tmp_path, unknown_types: int, unknown_tags: int):
    """spark-audit's console over a run whose coverage counts these unknowns: exit 0."""
    _fake_run(monkeypatch, unknown_types, unknown_tags)
    log = tmp_path / "__consumer_offsets-3"
    log.mkdir()
    (log / "00000000000000000000.log").write_bytes(b"")
    result = CliRunner().invoke(app, ["spark-audit", str(log)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return result


def test_the_console_shows_them_and_exits_0(monkeypatch, tmp_path):
    result = _console(monkeypatch, tmp_path, 1, 2)
    out = " ".join(result.stdout.split())
    assert ("not an error: 1 record(s) of a type Kafka does not define (skipped, as its loader skips them); "
            "2 tagged field(s) the record schemas do not know (kept raw, as Kafka keeps them)") in out
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert result.stderr == ""


def test_the_console_says_nothing_of_them_when_there_are_none(monkeypatch, tmp_path):
    result = _console(monkeypatch, tmp_path, 0, 0)
    assert "not an error" not in result.stdout
