"""Remote inputs: ``s3a://`` end to end against a real S3 endpoint on loopback (moto's
server), with the endpoint and keys given as Hadoop ``fs.s3a.*`` settings; and the JVM
Hadoop ``FileSystem`` listing that ``hdfs://`` (and every other Hadoop scheme) goes through."""

from __future__ import annotations

import os

import pytest

from kgtool.data import sample_path
from kgtool.errors import InputError
from kgtool.offsets.audit import AuditOptions
from kgtool.spark import job
from kgtool.spark.files import _hadoop_fs, _local_listdir, _local_stat, _resolve, resolve_inputs

pytestmark = pytest.mark.spark

BUCKET = "kgtool-offsets"
KEYS = {"fs.s3a.access.key": "kgtool-test", "fs.s3a.secret.key": "kgtool-secret",
        "fs.s3a.endpoint.region": "us-east-1"}


@pytest.fixture(scope="module")
def s3_endpoint():
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEYS["fs.s3a.access.key"],
                          aws_secret_access_key=KEYS["fs.s3a.secret.key"], region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    root = sample_path("sample_offsets")
    for d, _dirs, names in os.walk(root):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/")
            with open(os.path.join(d, n), "rb") as fh:
                client.put_object(Bucket=BUCKET, Key=f"broker-1/{rel}", Body=fh.read())
    yield endpoint
    server.stop()


@pytest.fixture
def s3a_conf(spark, s3_endpoint):
    conf = spark._jsc.hadoopConfiguration()
    settings = {**KEYS, "fs.s3a.endpoint": s3_endpoint}
    for k, v in settings.items():
        conf.set(k, v)
    yield settings
    for k in settings:
        conf.unset(k)


def _summary_rows(summary):
    return sorted((f["rule"], f["group"], f["topic"], f["partition"], f["offset"]) for f in summary.findings)


def test_s3a_listing_and_audit_equal_local(spark, s3a_conf):
    local = resolve_inputs([str(sample_path("sample_offsets"))])
    remote = resolve_inputs([f"s3a://{BUCKET}/broker-1/"], spark)
    # Same segments, same partitions and sizes; only the scheme and root differ.
    assert [(f.log_partition, f.size, f.path.rsplit("/", 2)[-2:]) for f in remote] == [
        (f.log_partition, f.size, f.path.rsplit("/", 2)[-2:]) for f in local
    ]
    assert all(f.path.startswith(f"s3a://{BUCKET}/broker-1/__consumer_offsets-") for f in remote)
    options = AuditOptions()
    # 600-byte reads: the task reads its S3 objects range by range, cut at batch boundaries.
    want = job.run_audit(spark, local, options, split_bytes=600)
    got = job.run_audit(spark, remote, options, split_bytes=600)
    assert got.splits == want.splits == 2  # one task per partition
    assert _summary_rows(got) == _summary_rows(want) and len(_summary_rows(got)) == 9  # the sample: every rule once
    assert got.counts == want.counts and got.coverage == [
        {**c} for c in want.coverage
    ]
    assert {f["source"] for f in got.findings} <= {f.path for f in remote}


def test_s3a_output_tables(spark, s3a_conf, tmp_path):
    # --out s3a://: the tasks write their tables with pyarrow's S3 client (no hadoop-aws jar).
    import pyarrow.parquet as pq

    from kgtool.offsets.tables import TABLE_NAMES
    from kgtool.spark.files import s3_filesystem, storage_options

    local = resolve_inputs([str(sample_path("sample_offsets"))])
    job.run_audit(spark, local, AuditOptions(), out=str(tmp_path / "out"))
    job.run_audit(spark, local, AuditOptions(), out=f"s3a://{BUCKET}/audit/run1")
    fs = s3_filesystem(storage_options(spark))
    for name in TABLE_NAMES:
        want = pq.read_table(str(tmp_path / "out" / name)).to_pylist()
        got = pq.read_table(f"{BUCKET}/audit/run1/{name}", filesystem=fs).to_pylist()
        assert got == want, name
    assert not [i.path for i in fs.get_file_info(__import__("pyarrow.fs").fs.FileSelector(f"{BUCKET}/audit"))
                if ".tmp-" in i.path or ".old-" in i.path]


def test_s3a_missing_prefix_bucket_and_object_are_input_errors(spark, s3a_conf):
    with pytest.raises(InputError, match="no-such-dir: no such file or directory"):
        resolve_inputs([f"s3a://{BUCKET}/no-such-dir"], spark)
    with pytest.raises(InputError, match="no such file or directory"):
        resolve_inputs(["s3a://kgtool-no-such-bucket/logs"], spark)
    from kgtool.spark.files import RangeReader, storage_options

    with pytest.raises(InputError, match=r"gone\.log: cannot read"):
        RangeReader(f"s3a://{BUCKET}/broker-1/__consumer_offsets-7/gone.log", storage_options(spark))


def test_hadoop_filesystem_listing_equals_local(spark):
    # hdfs://, gs://, abfs:// ... are listed through the JVM's Hadoop FileSystem; here the
    # same code lists a file:// tree (Hadoop's LocalFileSystem) and must agree with os.
    root = str(sample_path("sample_offsets"))
    stat, listdir = _hadoop_fs(spark, "file://" + root)
    via_hadoop = _resolve("file://" + root, stat, listdir)
    via_os = _resolve(root, _local_stat, _local_listdir)
    assert [(f.path, f.size, f.log_partition) for f in via_hadoop] == [
        ("file://" + f.path, f.size, f.log_partition) for f in via_os
    ]
    assert stat("file://" + root + "/missing") is None


def test_s3a_data_partition_directories_name_topics(spark, s3a_conf, s3_endpoint):
    """partition.metadata read from S3 (pyarrow's client, the fs.s3a settings); a directory
    without one is tried no further than its topic's next directories; nothing is a problem."""
    import boto3

    from kgtool.spark.files import TopicIds
    from kgtool.storage.checkpoints import encode_partition_metadata

    client = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id=KEYS["fs.s3a.access.key"],
                          aws_secret_access_key=KEYS["fs.s3a.secret.key"], region_name="us-east-1")
    seg = next(p for p in sample_path("sample_offsets").glob("__consumer_offsets-7/*.log"))
    client.put_object(Bucket=BUCKET, Key="broker-2/__consumer_offsets-7/00000000000000000000.log",
                      Body=seg.read_bytes())
    client.put_object(Bucket=BUCKET, Key="broker-2/orders-0/00000000000000000000.log", Body=b"data")  # no file
    client.put_object(Bucket=BUCKET, Key="broker-2/orders-1/partition.metadata",
                      Body=encode_partition_metadata(bytes(range(1, 17))))
    topics = TopicIds()
    files = resolve_inputs([f"s3a://{BUCKET}/broker-2/"], spark, topics=topics)
    assert [f.path.rsplit("/", 2)[-2] for f in files] == ["__consumer_offsets-7"]
    assert topics.names == {"AQIDBAUGBwgJCgsMDQ4PEA": "orders"} and topics.problems == []
