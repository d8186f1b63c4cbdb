"""Spark and Arrow schemas built from column lists (:mod:`kgtool.offsets.tables` and the job's own)."""

from __future__ import annotations

from typing import Any



def arrow_type(t: str) -> Any:
    import pyarrow as pa

    return {
        "string": pa.string(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "list<string>": pa.list_(pa.string()),
        "list<int64>": pa.list_(pa.int64()),
    }[t]


def spark_type(t: str) -> Any:
    from pyspark.sql import types as T

    return {
        "string": T.StringType(),
        "int32": T.IntegerType(),
        "int64": T.LongType(),
        "float64": T.DoubleType(),
        "bool": T.BooleanType(),
        "list<string>": T.ArrayType(T.StringType()),
        "list<int64>": T.ArrayType(T.LongType()),
    }[t]


def arrow_schema(columns: list[tuple[str, str]]) -> Any:
    import pyarrow as pa

    return pa.schema([pa.field(n, arrow_type(t)) for n, t in columns])


def spark_schema(columns: list[tuple[str, str]]) -> Any:
    from pyspark.sql import types as T

    return T.StructType([T.StructField(n, spark_type(t), True) for n, t in columns])
