"""The audit's tables on disk: written by the tasks, published by the driver.

Each task writes the tables of its log partition as one file per table,
``TMP/<table>/part-<partition>.parquet`` (or ``.json``, JSON Lines), streaming the commits table
chunk by chunk (one Parquet row group per chunk: bounded memory). A file is written under a
temporary name and renamed into place when complete, and its name depends only on the table and
the log partition: a task that Spark retries (a lost executor, a killed worker) rewrites the same
file, so no row is lost or doubled. When the job has succeeded the driver writes the coverage
table and ``_SUCCESS`` markers and renames ``TMP`` to the output directory; a failed or
interrupted run leaves the previous output as it was.

Local paths use ``os``; other URIs ``pyarrow.fs`` (``s3a://`` with the ``fs.s3a.*`` settings, see
:mod:`kgtool.spark.files`; ``hdfs://`` through libhdfs). On S3 a rename is a copy: the final move
of the output directory is not atomic there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from operator import itemgetter
from typing import Any

import numpy as np

from kgtool.errors import InputError
from kgtool.spark.files import arrow_fs, is_local, local_path

#: The columns given min/max statistics: what queries on the tables filter by (where in the log,
#: when, which partition and offset, which generation or producer). Statistics on every other
#: column (flags, epochs, versions, the other timestamps) slow the write and prune nothing a
#: query is likely to ask. String columns
#: have dictionary pages instead, which readers filter with (Spark's Parquet dictionary filter).
STATISTICS_COLUMNS = frozenset({"log_partition", "record_offset", "timestamp", "partition", "offset",
                                "generation_id", "producer_id"})


def parquet_options(schema: Any) -> dict[str, Any]:
    """Snappy (Spark's default codec); dictionary pages for the string columns (group, topic,
    metadata, owners... repeat a lot, whether they arrive as strings or dictionary-encoded) and
    min/max statistics for :data:`STATISTICS_COLUMNS`.

    Parquet names a list's strings by their leaf path (``owners.list.element``): naming the
    list itself would leave them PLAIN."""
    import pyarrow as pa

    def textual(t: Any) -> bool:
        return pa.types.is_string(t) or (pa.types.is_dictionary(t) and pa.types.is_string(t.value_type))

    text = [f.name for f in schema if textual(f.type)]
    text += [f"{f.name}.list.element" for f in schema if pa.types.is_list(f.type) and textual(f.type.value_type)]
    stats = [f.name for f in schema if f.name in STATISTICS_COLUMNS and not textual(f.type)]
    # 64-bit columns are record offsets, positions, timestamps: sequences that delta-encode to a
    # few bits a row (DELTA_BINARY_PACKED, read by Spark's vectorized reader since 3.3). The
    # commits table shrinks about sixfold at the same write speed.
    delta = {f.name: "DELTA_BINARY_PACKED" for f in schema if pa.types.is_int64(f.type)}
    # Values handed to each column's encoder 65,536 at a time, not 1,024 (faster); a page still
    # closes at about 1 MiB (pyarrow's data_page_size), checked after each batch.
    return {"compression": "snappy", "store_schema": False, "use_dictionary": text, "write_statistics": stats,
            "column_encoding": delta, "write_batch_size": 65536}


def rows_table(rows: list[Any], schema: Any) -> Any:
    """``pa.Table.from_pylist(rows, schema)``, faster for the replay's rows (dicts, or tuples in
    the schema's column order: the members table): transposed at C speed (``itemgetter``,
    ``zip``), and each list column converted once per distinct list object, the replay sharing
    one list between the rows of equal assignments (read-only)."""
    import pyarrow as pa

    if not rows:
        return schema.empty_table()
    names = schema.names
    if type(rows[0]) is tuple:
        columns = zip(*rows)
    else:
        columns = zip(*map(itemgetter(*names), rows)) if len(names) > 1 else ([r[names[0]] for r in rows],)
    arrays = []
    for f, col in zip(schema, columns):
        if pa.types.is_list(f.type):
            # one conversion per distinct list object (None included), then a gather
            ids = np.fromiter(map(id, col), np.int64, len(col))
            _u, first, codes = np.unique(ids, return_index=True, return_inverse=True)
            if len(first) * 2 > len(col):
                arrays.append(pa.array(col, f.type))
            else:
                distinct = pa.array([col[i] for i in first.tolist()], f.type)
                arrays.append(distinct.take(pa.array(codes.reshape(-1).astype(np.int32))))
        else:
            arrays.append(pa.array(col, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def part_name(log_partition: int, fmt: str) -> str:
    tag = f"{log_partition:05d}" if log_partition >= 0 else "unknown"
    return f"part-{tag}.{'parquet' if fmt == 'parquet' else 'json'}"


class _Dest:
    """A directory, local or remote, with the few operations the writers need."""

    def __init__(self, uri: str, storage: dict[str, str] | None = None) -> None:
        self.uri = uri.rstrip("/")
        self.local = is_local(uri)
        if self.local:
            self.path = local_path(self.uri)
            self.fs = None
        else:
            self.fs, self.path = arrow_fs(self.uri, storage)

    def join(self, *names: str) -> str:
        return "/".join([self.path, *names])

    def makedirs(self, path: str) -> None:
        if self.local:
            os.makedirs(path, exist_ok=True)
        else:
            self.fs.create_dir(path, recursive=True)

    def open_output(self, path: str) -> Any:
        if self.local:
            return open(path, "wb")
        return self.fs.open_output_stream(path)

    def rename(self, src: str, dst: str) -> None:
        if self.local:
            os.replace(src, dst)
            return
        import pyarrow.fs as pafs

        if self.fs.type_name != "s3" or self.fs.get_file_info(src).type != pafs.FileType.Directory:
            self.fs.move(src, dst)
            return
        # S3 has no directories to rename: copy every object, then delete the source.
        for info in self.fs.get_file_info(pafs.FileSelector(src, recursive=True)):
            if info.type == pafs.FileType.File:
                self.fs.copy_file(info.path, dst + info.path[len(src):])
        self.fs.delete_dir(src)

    def exists(self, path: str) -> bool:
        if self.local:
            return os.path.exists(path)
        import pyarrow.fs as pafs

        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        if self.local:
            return os.path.isdir(path)
        import pyarrow.fs as pafs

        return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def delete_dir(self, path: str) -> None:
        if self.local:
            shutil.rmtree(path, ignore_errors=True)
        elif self.exists(path):
            self.fs.delete_dir(path)

    def delete_file(self, path: str) -> None:
        if self.local:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
        else:
            self.fs.delete_file(path)

    def listdir(self, path: str) -> list[str]:
        if self.local:
            return sorted(os.listdir(path)) if os.path.isdir(path) else []
        import pyarrow.fs as pafs

        return sorted(i.base_name for i in self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True)))


class TableWriter:
    """One table file of one log partition, written atomically (see the module docstring)."""

    def __init__(self, root: str, table: str, log_partition: int, schema: Any, fmt: str,
                 storage: dict[str, str] | None = None) -> None:
        self.dest = _Dest(root, storage)
        self.schema = schema
        self.fmt = fmt
        directory = self.dest.join(table)
        self.dest.makedirs(directory)
        name = part_name(log_partition, fmt)
        self.final = f"{directory}/{name}"
        # S3 objects appear whole on close: no temporary name there (a rename would be a copy).
        self.tmp = self.final if not self.dest.local and _is_s3_like(root) else \
            f"{directory}/.{name}.{uuid.uuid4().hex[:12]}.tmp"
        self._stream = self.dest.open_output(self.tmp)
        self._writer: Any = None
        self.rows = 0

    def _parquet(self, schema: Any) -> Any:
        """The Parquet writer, made for the first table's schema (string columns may come
        dictionary-encoded: the file holds plain strings either way)."""
        if self._writer is None:
            import pyarrow.parquet as pq

            self._writer = pq.ParquetWriter(self._stream, schema, **parquet_options(schema))
        return self._writer

    def write(self, table: Any) -> None:
        """Append an Arrow table (or rows: dicts, or tuples in column order) of the writer's schema."""
        import pyarrow as pa

        if not isinstance(table, pa.Table):
            table = rows_table(list(table), self.schema)
        if not table.num_rows:
            return
        self.rows += table.num_rows
        if self.fmt == "parquet":
            self._parquet(table.schema).write_table(table)
            return
        lines = []
        for r in table.to_pylist():
            lines.append(json.dumps(r, ensure_ascii=False, separators=(",", ":")))
        self._stream.write(("\n".join(lines) + "\n").encode("utf-8"))

    def close(self) -> None:
        if self.fmt == "parquet":
            self._parquet(self.schema).close()  # an empty table still gets a file with its schema
        self._stream.close()
        if self.tmp != self.final:
            self.dest.rename(self.tmp, self.final)

    def abort(self) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
            self._stream.close()
        finally:
            if self.tmp != self.final:
                self.dest.delete_file(self.tmp)


def _is_s3_like(uri: str) -> bool:
    from kgtool.spark.files import is_s3

    return is_s3(uri)


def temporary_root(out: str) -> str:
    """A fresh temporary directory next to ``out`` (same filesystem: renamed into place)."""
    base = out.rstrip("/")
    parent, _sep, name = base.rpartition("/")
    if not _sep:
        parent, name = ".", base
    return f"{parent}/.{name}.tmp-{uuid.uuid4().hex[:12]}"


def prepare(tmp: str, storage: dict[str, str] | None = None) -> None:
    d = _Dest(tmp, storage)
    d.makedirs(d.path)


def discard(tmp: str, storage: dict[str, str] | None = None) -> None:
    try:
        d = _Dest(tmp, storage)
        d.delete_dir(d.path)
    except OSError:  # best effort: the temporary directory is hidden (dot name) anyway
        pass


def publish(tmp: str, out: str, tables: tuple[str, ...], storage: dict[str, str] | None = None) -> None:
    """Drop stray temporary files (attempts Spark killed), mark every table complete, and move
    ``tmp`` to ``out`` (replacing a previous output)."""
    d = _Dest(tmp, storage)
    for table in tables:
        directory = d.join(table)
        d.makedirs(directory)
        for name in d.listdir(directory):
            if name.startswith("."):
                d.delete_file(f"{directory}/{name}")
        with d.open_output(f"{directory}/_SUCCESS"):
            pass
    target = _Dest(out, storage)
    if target.exists(target.path):
        if not target.is_dir(target.path):
            raise InputError(f"{out}: exists and is not a directory")
        old = temporary_root(out).replace(".tmp-", ".old-")
        old_path = _Dest(old, storage).path
        try:
            target.rename(target.path, old_path)
        except OSError as exc:
            raise InputError(f"{out}: cannot move the previous output aside: {exc}") from None
        try:
            d.rename(d.path, target.path)
        except OSError as exc:
            target.rename(old_path, target.path)
            raise InputError(f"{out}: cannot rename the new output into place: {exc}") from None
        target.delete_dir(old_path)
        return
    parent = target.path.rstrip("/").rpartition("/")[0]
    if parent:
        target.makedirs(parent)
    try:
        d.rename(d.path, target.path)
    except OSError as exc:
        raise InputError(f"{out}: cannot rename the new output into place: {exc}") from None


@contextlib.contextmanager
def table_writers() -> Iterator[dict[str, TableWriter]]:
    """Table writers opened as a task needs them: all closed (published) when the block ends,
    all aborted (their temporary files removed) when it fails."""
    writers: dict[str, TableWriter] = {}
    try:
        yield writers
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    for w in writers.values():
        w.close()
