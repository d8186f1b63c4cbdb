"""The exchange between the lag stages (kgtool/spark/job.py): the lag inputs as bytes
(``LagInput.encode`` / ``decode``), cut into pieces and put together again, routed to their lag
task by Spark's partitioning, and the driver's check that every input written was read. The
whole path on a cluster whose hosts share no /tmp: test_cluster_private_tmp.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

from kgtool.lag.collector import LagInput
from kgtool.offsets.options import AuditOptions
from kgtool.spark import job
from kgtool.spark.task import PartitionFiles, audit_partition
from tests.lag import scenario as S


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[AuditOptions, object]:
    """The lag scenario's offsets partition audited in process: its summary, with its lag inputs."""
    broker = S.write(str(tmp_path_factory.mktemp("lag")))
    parts = tuple(((("orders", p), (os.path.join(broker["brokers"][0], f"orders-{p}"),)) for p in (0, 1)))
    options = AuditOptions(lag_partitions=parts)
    d = os.path.join(broker["root"], "__consumer_offsets-0")
    segs = sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".log"))
    return options, audit_partition(PartitionFiles(0, segs, [os.path.getsize(p) for p in segs]), options)


def assert_same_input(got: LagInput, want: LagInput) -> None:
    for name, value in vars(want).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(getattr(got, name), value), name
            assert getattr(got, name).dtype == value.dtype, name
        else:
            assert getattr(got, name) == value, name


def test_encode_decode_round_trip(inputs):
    _options, summary = inputs
    assert summary.lag_sent == [0, 1] and [k for k, _i in summary.lag] == [0, 1]
    for _index, inp in summary.lag:
        data = inp.encode()
        assert data.dtype == np.uint8
        # any buffer: bytes, a memoryview with data before it
        assert_same_input(LagInput.decode(data.tobytes()), inp)
        assert_same_input(LagInput.decode(memoryview(b"\0" * 3 + data.tobytes())[3:]), inp)


def test_decode_of_a_cut_input_says_so(inputs):
    _options, summary = inputs
    data = summary.lag[0][1].encode().tobytes()
    with pytest.raises(ValueError, match="holds"):
        LagInput.decode(data[:-1])
    with pytest.raises(ValueError, match="head of"):
        LagInput.decode(data[:12])
    with pytest.raises(ValueError, match="shorter than"):
        LagInput.decode(data[:5])


def _moved(summary, route, monkeypatch, piece_bytes):
    """The rows of ``_exchange_batches`` as a lag task receives them: by kind."""
    from kgtool.offsets.tables import arrow_schema
    from kgtool.spark.task import summary_rows

    monkeypatch.setattr(job, "PIECE_BYTES", piece_bytes)
    encoded = [(k, inp.encode()) for k, inp in summary.lag]
    batches = list(job._exchange_batches(summary, summary_rows(summary), encoded, route,
                                         arrow_schema(job.EXCHANGE_COLUMNS)))
    assert not encoded  # emptied as it went
    rows = [r for b in batches for r in b.to_pylist()]
    return {kind: [r for r in rows if r["kind"] == kind] for kind in {r["kind"] for r in rows}}


@pytest.mark.parametrize("piece_bytes", [job.PIECE_BYTES, 1000, 1])
def test_inputs_in_pieces_to_their_task_and_back(inputs, monkeypatch, piece_bytes):
    _options, summary = inputs
    route = [5, 9, 2]  # the task column's value for lag tasks 0, 1, 2
    by_kind = _moved(summary, route, monkeypatch, piece_bytes)
    # every lag task gets the partition's last timestamp; the summary row goes to one of them
    assert sorted(r["task"] for r in by_kind[job.LAG_META]) == sorted(route)
    assert [r["task"] for r in by_kind["summary"]] == [route[0 % 3]]
    pieces = by_kind[job.LAG_INPUT]
    for index, inp in summary.lag:
        mine = [r for r in pieces if r["data_partition"] == index]
        assert {r["task"] for r in mine} == {route[index % 3]}
        size = len(inp.encode())
        assert len(mine) == -(-size // piece_bytes) and all(len(r["payload"]) <= piece_bytes for r in mine)
        got = job._decoder({0: [len(mine), {r["piece"]: r["payload"] for r in reversed(mine)}]})()
        assert len(got) == 1
        assert_same_input(got[0], inp)


def test_an_input_missing_a_piece_is_left_out_and_the_driver_says_so(inputs, monkeypatch):
    options, summary = inputs
    pieces = [r for r in _moved(summary, [0, 1], monkeypatch, 1000)[job.LAG_INPUT] if r["data_partition"] == 1]
    assert len(pieces) > 2
    assert job._decoder({0: [len(pieces), {r["piece"]: r["payload"] for r in pieces[1:]}]})() == []
    # the lag task of data partition 1 read nothing from log partition 0: a problem, in the coverage too
    summary.coverage = dict(summary.coverage)
    results = [{"index": 0, "inputs": [0]}, {"index": 1, "inputs": []}]
    problems = job.check_lag_inputs([summary], results, options)
    assert (summary.coverage["lag_inputs"], summary.coverage["lag_inputs_read"]) == (2, 1)
    assert [(p["source"], p["position"], p["log_partition"]) for p in problems] == [("__consumer_offsets-0", None, 0)]
    assert "lag input for orders-1 was written but no lag task read it" in problems[0]["problem"]
    assert job.check_lag_inputs([summary], [{"index": 0, "inputs": [0]}, {"index": 1, "inputs": [0]}], options) == []
    assert (summary.coverage["lag_inputs"], summary.coverage["lag_inputs_read"]) == (2, 2)


def test_end_instant():
    assert job.end_instant(None, [3, None, 7]) == 7
    assert job.end_instant(5, [3, 7]) == 5
    assert job.end_instant(None, [None]) is None


@pytest.mark.spark
@pytest.mark.parametrize("tasks", [1, 2, 3, 4, 7, 16])
def test_hash_routes_land_where_spark_sends_them(spark, tasks):
    """Spark 4.0 has no repartitionById: a lag task's rows carry a value that Spark's hash
    partitioning sends to it (the same Murmur3 as Spark's hash())."""
    from pyspark.sql import functions as F

    routes = job.hash_routes(tasks)
    df = spark.createDataFrame([(v, k) for k, v in enumerate(routes)], "task int, want int")
    got = df.select(F.hash("task").alias("h"), "task").collect()
    assert [r["h"] for r in got] == [job.murmur3_int(v) for v in routes]
    placed = job._to_lag_tasks(df, tasks, by_id=False).select("want", F.spark_partition_id().alias("p")).collect()
    assert sorted((r["want"], r["p"]) for r in placed) == [(k, k) for k in range(tasks)]
    if hasattr(df, "repartitionById"):
        by_id = spark.createDataFrame([(k, k) for k in range(tasks)], "task int, want int")
        placed = job._to_lag_tasks(by_id, tasks, by_id=True).select("want", F.spark_partition_id().alias("p")).collect()
        assert sorted((r["want"], r["p"]) for r in placed) == [(k, k) for k in range(tasks)]
