"""Spark schemas built from column lists (:mod:`kgtool.offsets.tables` and the job's own); the
Arrow ones are :func:`kgtool.offsets.tables.arrow_schema`."""

from __future__ import annotations

from typing import Any



def spark_type(t: str) -> Any:
    from pyspark.sql import types as T

    return {
        "string": T.StringType(),
        "int32": T.IntegerType(),
        "int64": T.LongType(),
        "float64": T.DoubleType(),
        "bool": T.BooleanType(),
        "binary": T.BinaryType(),
        "list<string>": T.ArrayType(T.StringType()),
        "list<int64>": T.ArrayType(T.LongType()),
    }[t]


def spark_schema(columns: list[tuple[str, str]]) -> Any:
    from pyspark.sql import types as T

    return T.StructType([T.StructField(n, spark_type(t), True) for n, t in columns])
