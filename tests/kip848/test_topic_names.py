"""Topic ids become names through ``ConsumerGroupPartitionMetadata`` where the broker writes it;
where it does not (newer brokers keep only a metadata hash, KIP-1101), through the
``partition.metadata`` files (``PartitionMetadataFile``) of data partition directories given as
input; else the id is shown. Those directories are never audited as ``__consumer_offsets``."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app
from kgtool.coordinator.schema import uuid_from_str
from kgtool.offsets.audit import audit_entries
from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.options import AuditOptions
from kgtool.spark.files import TopicIds, resolve_inputs
from kgtool.storage.checkpoints import encode_partition_metadata
from tests.kip848.golden import SCENARIOS, segment, truth
from tests.kip848.relog import record_type, rewrite
from tests.spark.conftest import spark  # noqa: F401 - the shared session fixture

R00 = next(s for s in SCENARIOS if s.name.startswith("r00"))  # consumer members at the end of the log
PARTITION_METADATA_TYPE = 4  # ConsumerGroupPartitionMetadataKey's record type
TOPICS = {name: t["topic_id"] for name, t in truth(R00)["topics"].items()}  # rt0-0 (its directories: rt0-0-0...)


def without_partition_metadata(dst) -> None:
    """R00's log as a broker that writes no ConsumerGroupPartitionMetadata would have it."""
    changed = rewrite(segment(R00), dst,
                      lambda k, v: None if record_type(k) == PARTITION_METADATA_TYPE else (k, v))
    assert changed == []  # records dropped, none changed


def broker_dir(tmp_path, topics: dict[str, str]):
    """A broker log dir: __consumer_offsets-0 with R00's log (no partition metadata records), and
    ``<topic>-0`` and ``<topic>-1`` data partition directories with their partition.metadata."""
    logs = tmp_path / "data"
    (logs / "__consumer_offsets-0").mkdir(parents=True)
    without_partition_metadata(logs / "__consumer_offsets-0" / "00000000000000000000.log")
    for name, tid in topics.items():
        for p in (0, 1):
            d = logs / f"{name}-{p}"
            d.mkdir()
            (d / "partition.metadata").write_bytes(encode_partition_metadata(uuid_from_str(tid)))
            (d / "00000000000000000000.log").write_bytes(b"\0" * 100)  # data records: never audited
    return logs


def assigned(tables) -> set[str]:
    """The topic partitions of the consumer (KIP-848) members' current and target assignments."""
    return {tp for m in tables["group_members"] if m["type"] == "consumer" for col in ("assigned", "target")
            for tp in m[col] or ()}


def test_the_log_without_partition_metadata_shows_ids(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    without_partition_metadata(log)
    tables = audit_entries(entries_from_file(str(log), log_partition=0)).tables
    topics = {tp.rpartition("-")[0] for tp in assigned(tables)}
    assert topics and topics <= set(TOPICS.values())  # ids: nothing names them


def test_resolve_inputs_reads_the_names_and_audits_only_the_offsets_log(tmp_path):
    logs = broker_dir(tmp_path, TOPICS)
    topics = TopicIds()
    files = resolve_inputs([str(logs)], topics=topics)
    assert [(f.log_partition, f.path.rsplit("/", 2)[-2]) for f in files] == [(0, "__consumer_offsets-0")]
    assert topics.names == {tid: name for name, tid in TOPICS.items()}
    assert (topics.problems, topics.directories) == ([], 2)
    # a data partition directory given by itself is read for its name, not audited
    alone = TopicIds()
    assert resolve_inputs([str(logs / "rt0-0-1"), str(logs / "__consumer_offsets-0")], topics=alone) == files
    assert alone.names == {TOPICS["rt0-0"]: "rt0-0"}


def test_the_names_reach_the_groups_tables(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    without_partition_metadata(log)
    names = tuple(sorted((tid, name) for name, tid in TOPICS.items()))
    result = audit_entries(entries_from_file(str(log), log_partition=0), options=AuditOptions(topic_names=names))
    got = assigned(result.tables)
    assert got and {tp.rpartition("-")[0] for tp in got} <= set(TOPICS)
    # the same as Kafka's log with its ConsumerGroupPartitionMetadata records
    want = audit_entries(entries_from_file(segment(R00), log_partition=0)).tables
    assert result.tables["group_members"] == want["group_members"]
    assert [m["assigned_partitions"] for m in result.tables["members"]] == \
        [m["assigned_partitions"] for m in want["members"]]


def test_the_files_name_ids_before_4_0s_partition_metadata_records(tmp_path):
    """The order of the name sources (issue 39): a v4 commit's topic and topic id, then the
    ``partition.metadata`` files, then the ConsumerGroupPartitionMetadata records 4.0 wrote (4.1+
    writes none, and deletes them): a file's name is shown over a record's."""
    other = tuple(sorted((tid, "renamed-" + name) for name, tid in TOPICS.items()))
    result = audit_entries(entries_from_file(segment(R00), log_partition=0), options=AuditOptions(topic_names=other))
    assert {tp.rpartition("-")[0] for tp in assigned(result.tables)} <= {"renamed-" + n for n in TOPICS}
    # without the files, the records still name them
    plain = audit_entries(entries_from_file(segment(R00), log_partition=0))
    assert {tp.rpartition("-")[0] for tp in assigned(plain.tables)} <= set(TOPICS)


def test_a_partition_metadata_that_does_not_parse_is_a_problem_line(tmp_path):
    logs = broker_dir(tmp_path, TOPICS)
    for p in (0, 1):
        (logs / f"rt0-0-{p}" / "partition.metadata").write_text("version: 1\ntopic_id: x\n")
    topics = TopicIds()
    resolve_inputs([str(logs)], topics=topics)
    assert topics.names == {}
    assert topics.problems == [f"{logs}/rt0-0-0/partition.metadata: byte 0 (version): unrecognised version '1', "
                               "expected 0 (PartitionMetadataFile)"]


def test_only_data_directories_is_an_input_error(tmp_path):
    logs = broker_dir(tmp_path, TOPICS)
    shutil.rmtree(logs / "__consumer_offsets-0")
    result = CliRunner().invoke(app, ["spark-audit", str(logs / "rt0-0-0")])
    assert result.exit_code == 2, result.output
    assert "no __consumer_offsets segment files to audit" in result.stderr
    assert "read for topic names only" in result.stderr


@pytest.mark.spark
def test_spark_audit_names_topics_from_partition_metadata(spark, tmp_path):  # noqa: F811
    import pyarrow.parquet as pq

    logs = broker_dir(tmp_path, TOPICS)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["spark-audit", str(logs), "--master", "local[1]", "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    assert "warning" not in result.stderr
    named = pq.read_table(out / "group_members").to_pylist()
    assert assigned({"group_members": named}) and {tp.rpartition("-")[0] for tp in assigned({"group_members": named})} \
        <= set(TOPICS)
    [cov] = pq.read_table(out / "coverage").to_pylist()
    assert cov["log_partition"] == 0 and cov["problems"] == 0  # the data directories were not audited
    # without the files: ids
    for name in TOPICS:
        for p in (0, 1):
            (logs / f"{name}-{p}" / "partition.metadata").unlink()
    shutil.rmtree(out)
    result = CliRunner().invoke(app, ["spark-audit", str(logs), "--master", "local[1]", "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    ids = pq.read_table(out / "group_members").to_pylist()
    assert {tp.rpartition("-")[0] for tp in assigned({"group_members": ids})} <= set(TOPICS.values())


def test_a_broker_log_dir_named_like_a_partition_is_still_a_broker_log_dir(tmp_path):
    """``/mnt/kafka-logs-1`` parses as partition 1 of a topic ``kafka-logs``; without a
    partition.metadata of its own it is read as the broker log directory it is."""
    logs = broker_dir(tmp_path, TOPICS).rename(tmp_path / "kafka-logs-1")
    topics = TopicIds()
    files = resolve_inputs([str(logs)], topics=topics)
    assert [f.path.rsplit("/", 2)[-2] for f in files] == ["__consumer_offsets-0"]
    assert topics.names == {tid: name for name, tid in TOPICS.items()}
