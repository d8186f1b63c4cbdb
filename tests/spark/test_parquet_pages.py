"""kgtool's own Parquet pages (kgtool.spark.parquet_pages, the C encoders of _parquet.h): the file
read back by pyarrow and by Spark is the table pyarrow's writer writes from the same columns, for
any values (deltas that wrap, extremes, long runs and short, nulls, pages split), with the same
schema and statistics."""

from __future__ import annotations

import io
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgtool.spark import parquet_pages as pp
from kgtool.spark.output import STATISTICS_COLUMNS, TableWriter
from tests.twins import compiled, have_compiled

I32, I64 = np.iinfo(np.int32), np.iinfo(np.int64)


def _schema(columns) -> pa.Schema:
    return pa.schema([pa.field(c.name, pa.string() if isinstance(c, pp.DictColumn) else pa.bool_()
                               if isinstance(c, pp.BoolColumn) else
                               (pa.int32() if c.values.dtype == np.int32 else pa.int64()),
                               nullable=isinstance(c, pp.DictColumn) and c.nullable) for c in columns])


def _ours(n, columns) -> bytes:
    out = io.BytesIO()
    size = pp.write_file(out, n, columns, STATISTICS_COLUMNS)
    assert size == len(out.getvalue())
    return out.getvalue()


def _theirs(n, columns) -> bytes:
    from kgtool.spark.output import parquet_options

    out = io.BytesIO()
    table = pp.arrow_table(n, columns, _schema(columns))
    pq.write_table(table, out, **parquet_options(table.schema))
    return out.getvalue()


@st.composite
def _integers(draw, n, dtype):
    info = I32 if dtype == np.int32 else I64
    kind = draw(st.sampled_from(["any", "steps", "constant", "extremes"]))
    if kind == "constant":
        return np.full(n, draw(st.integers(info.min, info.max)), dtype)
    if kind == "extremes":  # deltas that wrap around the column's width both ways
        return np.array(draw(st.lists(st.sampled_from([info.min, info.max, 0, -1, 1]), min_size=n, max_size=n)),
                        dtype)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if kind == "steps":  # a time or an offset going on: small steps, now and then a jump
        steps = rng.integers(0, 1000, n)
        steps[rng.random(n) < 0.01] = int(rng.integers(-(2**40), 2**40)) if dtype == np.int64 else 1 << 20
        start = int(rng.integers(-(2**30), 2**30))
        return (start + np.cumsum(steps)).astype(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


@st.composite
def _codes(draw, n, nullable):
    size = draw(st.sampled_from([1, 2, 3, 7, 8, 200, 1700, 70000] + ([0] if nullable else [])))
    if not size:  # nobody at all: an empty dictionary, every row null
        return np.full(n, -1, np.int32), []
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["random", "runs", "one"]))
    if kind == "one":
        codes = np.full(n, int(rng.integers(0, size)), np.int32)
    elif kind == "runs":  # runs of any length, 8 or more among them (RLE runs) and shorter (bit-packed)
        lengths = rng.integers(1, 40, n)
        codes = np.repeat(rng.integers(0, size, n), lengths)[:n].astype(np.int32)
    else:
        codes = rng.integers(0, size, n, dtype=np.int32)
    if nullable and draw(st.booleans()):
        codes[rng.random(n) < draw(st.sampled_from([0.01, 0.5, 1.0]))] = -1
    values = [f"v{i}-{'é' * (i % 3)}" for i in range(size)]
    return codes, values


@st.composite
def _tables(draw):
    n = draw(st.integers(1, 2000))
    columns = [pp.IntColumn("timestamp", draw(_integers(n, np.int64))),
               pp.IntColumn("partition", draw(_integers(n, np.int32))),
               pp.IntColumn("lag", draw(_integers(n, np.int64))),
               pp.IntColumn("small", draw(_integers(n, np.int32))),
               pp.BoolColumn("exact", np.random.default_rng(draw(st.integers(0, 2**32 - 1))).random(n)
                             < draw(st.sampled_from([0.0, 0.3, 1.0])))]
    for name, nullable in (("group", False), ("host", True), ("client_id", True)):
        codes, values = draw(_codes(n, nullable))
        columns.append(pp.DictColumn(name, codes, values, nullable))
    return n, columns


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_tables(), st.sampled_from([pp.PAGE_ROWS, 100, 129]))
def test_read_back_as_pyarrow_writes_it(table, page_rows):
    compiled("kgtool.offsets._replay")
    n, columns = table
    saved = pp.PAGE_ROWS
    pp.PAGE_ROWS = page_rows  # several pages a column too
    try:
        ours = pq.ParquetFile(io.BytesIO(_ours(n, columns)))
    finally:
        pp.PAGE_ROWS = saved
    theirs = pq.ParquetFile(io.BytesIO(_theirs(n, columns)))
    assert ours.schema_arrow == theirs.schema_arrow
    assert ours.schema.equals(theirs.schema)
    assert ours.read().equals(theirs.read())
    assert ours.metadata.num_rows == n
    for i, c in enumerate(columns):
        mine, want = ours.metadata.row_group(0).column(i), theirs.metadata.row_group(0).column(i)
        assert mine.path_in_schema == c.name
        if c.name in STATISTICS_COLUMNS:
            assert (mine.statistics.min, mine.statistics.max) == (want.statistics.min, want.statistics.max)
            assert (mine.statistics.min, mine.statistics.max) == (int(c.values.min()), int(c.values.max()))
        else:
            assert mine.statistics is None or not mine.statistics.has_min_max
        if isinstance(c, pp.DictColumn):
            assert mine.has_dictionary_page and mine.dictionary_page_offset < mine.data_page_offset
            assert "RLE_DICTIONARY" in mine.encodings
        elif isinstance(c, pp.BoolColumn):
            assert mine.physical_type == "BOOLEAN" and "PLAIN" in mine.encodings
        else:
            assert "DELTA_BINARY_PACKED" in mine.encodings


def test_a_null_in_a_column_without_nulls_is_an_error():
    compiled("kgtool.offsets._replay")
    columns = [pp.DictColumn("group", np.array([0, -1, 0], np.int32), ["g"], nullable=False)]
    with pytest.raises(ValueError, match="null"):
        _ours(3, columns)


def test_columns_of_other_lengths_than_the_rows_are_an_error():
    compiled("kgtool.offsets._replay")
    columns = [pp.IntColumn("timestamp", np.arange(4, dtype=np.int64)),
               pp.DictColumn("group", np.zeros(3, np.int32), ["g"])]
    with pytest.raises(ValueError, match="'group': 3 values, not 4"):
        _ours(4, columns)


def test_a_code_past_its_dictionary_is_an_error():
    replay = compiled("kgtool.offsets._replay")
    with pytest.raises(ValueError, match="wider"):
        replay.parquet_rle(np.array([0, 1, 4], np.int32), 2, 0)


def _lag_like(n: int, seed: int) -> pp.Columns:
    rng = np.random.default_rng(seed)
    seq = np.sort(rng.integers(0, 40, n)).astype(np.int32)
    owner = rng.integers(-1, 5, n).astype(np.int32)
    columns = [
        pp.DictColumn("group", seq, [f"group-{i}" for i in range(40)]),
        pp.IntColumn("log_partition", (seq % 3).astype(np.int32)),
        pp.IntColumn("timestamp", 1717171200000 + np.cumsum(rng.integers(0, 2000, n))),
        pp.IntColumn("lag", rng.integers(0, 10_000, n)),
        pp.DictColumn("consumer_id", owner, [f"member-{i}" for i in range(5)], nullable=True),
        pp.DictColumn("host", np.full(n, -1, np.int32), [], nullable=True),  # nobody held it: no dictionary
    ]
    return pp.Columns(n, columns, _schema(columns))


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_table_writer_writes_columns_whole_or_through_arrow(tmp_path, monkeypatch, fmt):
    """TableWriter.write(Columns): kgtool's pages when built, pyarrow's writer otherwise (and for
    JSON Lines); the same rows read back."""
    table = _lag_like(5000, 1)
    want = table.to_pylist()
    paths = {}
    for mode in ("native", "arrow"):
        if mode == "native" and not have_compiled("kgtool.offsets._replay"):
            continue
        if mode == "arrow":
            monkeypatch.setattr(pp, "_native", None)
        w = TableWriter(str(tmp_path / mode), "lag", 7, table.schema, fmt)
        w.write(table)
        w.close()
        paths[mode] = os.path.join(tmp_path, mode, "lag", f"part-00007.{'parquet' if fmt == 'parquet' else 'json'}")
    for path in paths.values():
        if fmt == "parquet":
            got = pq.read_table(path).to_pylist()
        else:
            import json

            got = [json.loads(line) for line in open(path, encoding="utf-8")]
        assert got == want


def test_spark_reads_them_as_it_reads_pyarrows(spark, tmp_path):
    """Spark's vectorized reader (DELTA_BINARY_PACKED, RLE_DICTIONARY with nulls, several pages)
    and its schema from the footer: the same as from pyarrow's file of the same columns."""
    compiled("kgtool.offsets._replay")
    saved = pp.PAGE_ROWS
    pp.PAGE_ROWS = 3000
    try:
        for k in range(2):
            table = _lag_like(10_000 + k, k)
            for who, data in (("ours", _ours(table.n, table.columns)), ("theirs", _theirs(table.n, table.columns))):
                os.makedirs(tmp_path / who, exist_ok=True)
                (tmp_path / who / f"part-{k}.parquet").write_bytes(data)
    finally:
        pp.PAGE_ROWS = saved
    ours = spark.read.parquet(str(tmp_path / "ours"))
    theirs = spark.read.parquet(str(tmp_path / "theirs"))
    assert ours.schema == theirs.schema
    order = ["group", "timestamp", "lag", "consumer_id", "log_partition"]
    a, b = ours.orderBy(*order).collect(), theirs.orderBy(*order).collect()
    assert len(a) == 20_001 and a == b
    # the statistics Spark prunes row groups with
    assert ours.where("timestamp < 0").count() == 0
    assert ours.where("log_partition = 2").count() == theirs.where("log_partition = 2").count() > 0
