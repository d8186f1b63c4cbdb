"""Spark and Arrow schemas built from the column lists of :mod:`kgtool.offsets.tables`."""

from __future__ import annotations

from typing import Any

from kgtool.offsets.entries import ENTRY_COLUMNS
from kgtool.offsets.tables import TABLES

# The replay's output rows: the table name, the columns of the commits table (the bulk of the
# output, typed), and for rows of the other (small) tables the row as JSON text in ``row``
# (with ``group``, ``log_partition`` and ``record_offset`` also set, for sorting and counting).
REPLAY_COLUMNS: list[tuple[str, str]] = [("table", "string"), *TABLES["commits"], ("row", "string")]

SPLIT_COLUMNS: list[tuple[str, str]] = [
    ("path", "string"),
    ("log_partition", "int32"),
    ("start", "int64"),
    ("end", "int64"),
]

FILE_COLUMNS: list[tuple[str, str]] = [
    ("path", "string"),
    ("size", "int64"),
    ("log_partition", "int32"),
]


def arrow_type(t: str) -> Any:
    import pyarrow as pa

    return {
        "string": pa.string(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "list<string>": pa.list_(pa.string()),
    }[t]


def spark_type(t: str) -> Any:
    from pyspark.sql import types as T

    return {
        "string": T.StringType(),
        "int32": T.IntegerType(),
        "int64": T.LongType(),
        "bool": T.BooleanType(),
        "list<string>": T.ArrayType(T.StringType()),
    }[t]


def arrow_schema(columns: list[tuple[str, str]]) -> Any:
    import pyarrow as pa

    return pa.schema([pa.field(n, arrow_type(t)) for n, t in columns])


def spark_schema(columns: list[tuple[str, str]]) -> Any:
    from pyspark.sql import types as T

    return T.StructType([T.StructField(n, spark_type(t), True) for n, t in columns])


def table_schema(name: str) -> Any:
    return spark_schema(TABLES[name])


def entry_schema() -> Any:
    return spark_schema(ENTRY_COLUMNS)
