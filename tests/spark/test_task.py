"""A partition audited from its segment bytes (columnar decoder, compiled or pure; commit loop
compiled or pure; tiny chunks) equals the oracle audit of the same bytes decoded entry by entry.
No Spark here: the task function itself (kgtool.spark.task.audit_partition)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.offsets.coverage import SegmentFile
from kgtool.offsets.decode import entries_from_file
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.tables import TABLE_NAMES
from kgtool.offsets.writer import write_segment
from kgtool.spark.task import PartitionFiles, audit_partition
from tests.offsets.oracle_audit import ORACLE_TABLES, canonical, oracle_audit
from tests.offsets.test_partition_differential import GROUPS, build, op, options

PATHS = [pytest.param(True, id="pure")]
try:
    from kgtool.offsets.columns import _speedups

    if _speedups() is not None:
        PATHS.append(pytest.param(False, id="c"))
except ImportError:  # pragma: no cover
    pass

# Several partitions in one batch (compressed or not): multi-row batches through the columns.
multi = st.tuples(st.just("multi"), st.sampled_from(GROUPS), st.integers(0, 40),
                  st.sampled_from(["none", "gzip", "lz4", "zstd", "snappy"]), st.booleans())


def run(tmp, script, opts: AuditOptions, pure: bool, max_rows: int) -> tuple[dict, dict]:
    d = os.path.join(tmp, f"__consumer_offsets-{script.log_partition}")
    path = write_segment(script, d)
    size = os.path.getsize(path)
    got: dict = {name: [] for name in TABLE_NAMES}

    def sink(name, table):
        got[name].extend(table.to_pylist() if hasattr(table, "to_pylist") else table)

    files = PartitionFiles(script.log_partition, [path], [size])
    summary = audit_partition(files, opts, pure=pure, sink=sink, max_rows=max_rows)
    got["coverage"] = [summary.coverage]
    entries = list(entries_from_file(path, log_partition=script.log_partition))
    want = oracle_audit(entries, files=[SegmentFile(path, size, script.log_partition)], options=opts)
    return got, want


@pytest.mark.parametrize("pure", PATHS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.one_of(op, multi), max_size=40), opts=options, max_rows=st.integers(1, 6))
def test_bytes_to_tables_equal_oracle(tmp_path_factory, pure, ops, opts, max_rows):
    script = build(ops)
    got, want = run(str(tmp_path_factory.mktemp("seg")), script, opts, pure, max_rows)
    for name in ORACLE_TABLES:
        if want[name] or got[name]:
            assert canonical(name, got[name]) == canonical(name, want[name]), name


def _sample_tables(tmp_path) -> tuple[str, int]:
    """The first sample script's partition audited by the task, its tables written under
    ``tmp_path/out``: (that directory, the log partition)."""
    from kgtool.offsets.samples import sample_scripts

    script = sample_scripts()[0]
    path = write_segment(script, str(tmp_path / f"__consumer_offsets-{script.log_partition}"))
    files = PartitionFiles(script.log_partition, [path], [os.path.getsize(path)])
    out = str(tmp_path / "out")
    audit_partition(files, AuditOptions(), out_root=out)
    return out, script.log_partition


def test_parquet_files_dictionary_encode_their_strings(tmp_path):
    """Every string column, dictionary-typed ones and the owners list's leaf included, is
    written with a dictionary page; min/max statistics only on the columns queries filter by
    (``parquet_options``)."""
    import pyarrow.parquet as pq

    from kgtool.spark.output import STATISTICS_COLUMNS

    out, part = _sample_tables(tmp_path)
    meta = pq.ParquetFile(os.path.join(out, "commits", f"part-{part:05d}.parquet")).metadata
    assert meta.num_rows > 0
    columns = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i)
               for i in range(meta.num_columns)}
    for name in ("group", "topic", "source", "metadata", "protocol", "owners.list.element"):
        assert columns[name].has_dictionary_page, name
        assert not columns[name].is_stats_set, name
    for name in ("record_offset", "offset", "timestamp"):
        assert not columns[name].has_dictionary_page, name
        assert columns[name].is_stats_set, name
        assert "DELTA_BINARY_PACKED" in columns[name].encodings, name  # 64-bit sequences
    assert "DELTA_BINARY_PACKED" not in columns["partition"].encodings  # int32: plain
    for name, column in columns.items():
        assert column.is_stats_set == (name in STATISTICS_COLUMNS), name
    assert {"log_partition", "partition", "generation_id", "producer_id"} <= set(columns)


def test_rows_table_equals_from_pylist():
    """The writer's row conversion (list columns converted once per distinct list object) gives
    exactly ``pa.Table.from_pylist``: shared lists, fresh lists, None and empty lists."""
    import pyarrow as pa

    from kgtool.spark.output import rows_table

    schema = pa.schema([("g", pa.string()), ("n", pa.int32()), ("l", pa.list_(pa.string()))])
    shared, other = ["t-0", "t-1"], []
    for rows in ([{"g": "a", "n": i, "l": [shared, None, other][i % 3]} for i in range(30)],
                 [{"g": "b", "n": i, "l": [str(i)] if i % 4 else None} for i in range(9)],
                 [{"g": "c", "n": 1, "l": None}], []):
        assert rows_table(rows, schema).equals(pa.Table.from_pylist(rows, schema=schema))
        tuples = [(r["g"], r["n"], r["l"]) for r in rows]  # the members table's rows
        assert rows_table(tuples, schema).equals(pa.Table.from_pylist(rows, schema=schema))


@pytest.mark.spark
def test_spark_reads_the_written_tables(spark, tmp_path):
    """Spark's own Parquet reader (vectorized, delta-encoded int64 columns) reads every table the
    task wrote, with the rows pyarrow reads."""
    import pyarrow.parquet as pq

    out, part = _sample_tables(tmp_path)
    for table in ("commits", "generations", "members", "rebalances", "offsets"):
        f = os.path.join(out, table, f"part-{part:05d}.parquet")
        want = pq.read_table(f).to_pylist()
        got = [r.asDict(recursive=True) for r in spark.read.parquet(f).collect()]
        assert got == want, table
