"""How the texts in this directory were captured (PySpark 4.3, Java 17): run one Spark job made to
fail on purpose and write what PySpark raised. Not a test; run by hand when Spark's texts change:

    python tests/spark/failure_texts/capture.py KIND [ACTION] [--master M] [--conf K=V ...] > NAME.txt

KIND: input, decode, large (a kgtool error raised in a mapInArrow task), memory (MemoryError),
exit (os._exit in the worker), kill (SIGKILL of the worker), bug (KeyError), killjvm (the task
SIGKILLs the JVM that runs it: the driver in local mode, an executor with
--master 'local-cluster[1,1,1024]'), exec-oom (a 1.2 GB string in a JVM task), driver-oom
(collect of 30M rows; run with --conf spark.driver.memory=300m --conf spark.testing.memory=536870912),
gateway-dead (the driver JVM SIGKILLed between two calls).
ACTION (for task failures): collect (default), iter (toLocalIterator), write (Parquet),
applyInArrow, rdd.

Output: a first line ``# type: <exception class>``, then ``str(exc)``, the JVM stack trace PySpark
kept (``_stackTrace``) and, for a lost connection, the py4j error it was raised from.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time


def _raise_input():
    from kgtool.errors import InputError

    raise InputError("seg/00000000000000000000.log: byte 4213: length 812 exceeds 301 bytes remaining")


def _raise_decode():
    from kgtool.errors import DecodeError

    try:
        int("x")
    except ValueError as e:
        raise DecodeError("bad varint", source="a.log", position=17, context="batch@0.records[1].key") from e


def _raise_large():
    from kgtool.errors import InputError

    raise InputError("group G has 123456789 records, too large for one task's memory: raise spark.executor.pyspark.memory")


def _raise_memory():
    raise MemoryError()


def _exit_worker():
    os._exit(1)


def _kill_worker():
    os.kill(os.getpid(), signal.SIGKILL)


def _bug():
    return {}["missing"]


def _kill_jvm():
    # worker -> pyspark daemon -> the JVM running the task
    with open(f"/proc/{os.getppid()}/stat") as f:
        grandparent = int(f.read().rsplit(")", 1)[1].split()[1])
    os.kill(grandparent, signal.SIGKILL)


TASK_FAILURES = {"input": _raise_input, "decode": _raise_decode, "large": _raise_large, "memory": _raise_memory,
                 "exit": _exit_worker, "kill": _kill_worker, "bug": _bug, "killjvm": _kill_jvm}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kind")
    ap.add_argument("action", nargs="?", default="collect")
    ap.add_argument("--master", default="local[1]")
    ap.add_argument("--conf", action="append", default=[])
    a = ap.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    b = SparkSession.builder.master(a.master).config("spark.ui.enabled", "false")
    for kv in a.conf:
        k, _, v = kv.partition("=")
        b = b.config(k, v)
    spark = b.getOrCreate()
    try:
        if a.kind == "driver-oom":
            spark.range(0, 30_000_000).selectExpr("id", "repeat('x', 20) s").collect()
        elif a.kind == "exec-oom":
            spark.range(0, 2, 1, 2).selectExpr("repeat('x', 400000000 + id) s").selectExpr(
                "length(concat(s, s, s))").collect()
        elif a.kind == "gateway-dead":
            os.kill(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid(), signal.SIGKILL)
            time.sleep(1)
            spark.range(3).collect()
        else:
            fn = TASK_FAILURES[a.kind]
            df = spark.range(0, 4, 1, 2)

            def run(batches):
                for batch in batches:
                    fn()
                    yield batch

            if a.action == "collect":
                df.mapInArrow(run, df.schema).collect()
            elif a.action == "iter":
                list(df.mapInArrow(run, df.schema).toLocalIterator())
            elif a.action == "write":
                df.mapInArrow(run, df.schema).write.mode("overwrite").parquet(f"/tmp/capture-{os.getpid()}")
            elif a.action == "applyInArrow":
                df.groupBy("id").applyInArrow(lambda t: (fn(), t)[1], "id long").collect()
            elif a.action == "rdd":
                df.rdd.map(lambda r: (fn(), r)[1]).collect()
        print("# no failure")
    except Exception as exc:  # noqa: BLE001 - the point
        text = str(exc)
        stack = getattr(exc, "_stackTrace", None)
        if stack:
            text += "\n" + stack
        if type(exc).__name__ == "ConnectionRefusedError" and exc.__context__ is not None:
            text += "\n" + str(exc.__context__)
        print(f"# type: {type(exc).__module__}.{type(exc).__qualname__}")
        print(text)


if __name__ == "__main__":
    main()
