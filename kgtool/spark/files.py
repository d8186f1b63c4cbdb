"""Input resolution on the driver, byte-range reading in executors.

Accepted inputs: broker log directories (their ``__consumer_offsets-N`` subdirectories are
used), ``__consumer_offsets-N`` directories, and segment files (``*.log``). Index files,
snapshots and files being deleted or cleaned (``.index``, ``.timeindex``, ``.snapshot``,
``.txnindex``, ``.deleted``, ``.cleaned``, ``.swap``) are not segments and are ignored.

Local paths are listed with ``os`` and read with ``mmap``. Other URIs (``hdfs://``,
``s3a://``, ...) are listed on the driver through the JVM's Hadoop ``FileSystem`` API (so
every filesystem Spark is configured for works for listing), and read by executors through
``pyarrow.fs``: ``hdfs://`` needs libhdfs (``HADOOP_HOME``/``ARROW_LIBHDFS_DIR`` and the
Hadoop classpath) on every executor, ``s3a://`` is read as ``s3://`` with pyarrow's S3 client
(credentials from the usual AWS environment / instance profile, not from ``fs.s3a.*``).
Executors read only their byte range (at most one split plus one batch), never a whole file.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlparse

from kgtool.errors import InputError, UsageError
from kgtool.offsets.coverage import SegmentFile
from kgtool.offsets.decode import log_partition_of

_PARTITION_DIR = re.compile(r"^__consumer_offsets-(\d+)$")
UNKNOWN_PARTITION = -1


def is_local(path: str) -> bool:
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def local_path(path: str) -> str:
    return urlparse(path).path if path.startswith("file:") else path


def _is_segment_name(name: str) -> bool:
    return name.endswith(".log")


def _segments_in(directory: str, names: list[tuple[str, int]], partition: int) -> list[SegmentFile]:
    return [
        SegmentFile(path=f"{directory.rstrip('/')}/{n}", size=size, log_partition=partition)
        for n, size in sorted(names)
        if _is_segment_name(n)
    ]


def _resolve(path: str, stat, listdir) -> list[SegmentFile]:
    """Shared logic: ``stat(p) -> (is_dir, size) | None``, ``listdir(p) -> [(name, is_dir, size)]``."""
    st = stat(path)
    if st is None:
        raise InputError(f"{path}: no such file or directory")
    is_dir, size = st
    if not is_dir:
        part = log_partition_of(path)
        return [SegmentFile(path=path, size=size, log_partition=UNKNOWN_PARTITION if part is None else part)]
    base = path.rstrip("/")
    name = base.rsplit("/", 1)[-1]
    entries = listdir(path)
    m = _PARTITION_DIR.match(name)
    if m:
        return _segments_in(base, [(n, s) for n, d, s in entries if not d], int(m.group(1)))
    out: list[SegmentFile] = []
    for n, d, _s in sorted(entries):
        pm = _PARTITION_DIR.match(n)
        if d and pm:
            sub = f"{base}/{n}"
            out.extend(_segments_in(sub, [(x, s) for x, dd, s in listdir(sub) if not dd], int(pm.group(1))))
    if out:
        return out
    direct = _segments_in(base, [(n, s) for n, d, s in entries if not d], UNKNOWN_PARTITION)
    if direct:
        return direct
    raise InputError(
        f"{path}: no __consumer_offsets-N directories and no .log segment files in this directory"
    )


def _local_stat(p: str):
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from None
    import stat as _stat

    return (_stat.S_ISDIR(st.st_mode), st.st_size)


def _local_listdir(p: str):
    try:
        with os.scandir(p) as it:
            return [(e.name, e.is_dir(), 0 if e.is_dir() else e.stat().st_size) for e in it]
    except PermissionError:
        raise InputError(f"{p}: permission denied") from None


def resolve_inputs(paths: list[str], spark: Any = None) -> list[SegmentFile]:
    """The segment files named by ``paths`` (sorted by partition, then path).

    Raises:
        InputError: a path is missing or holds no segment.
        UsageError: segments of unknown partition come from more than one directory (their
            offsets cannot be told apart: name the directories ``__consumer_offsets-N``).
    """
    files: list[SegmentFile] = []
    for p in paths:
        if is_local(p):
            lp = local_path(p)
            files.extend(_resolve(lp, _local_stat, _local_listdir))
        else:
            if spark is None:
                raise UsageError(f"{p}: a remote path needs a Spark session")
            stat, listdir = _hadoop_fs(spark, p)
            files.extend(_resolve(p, stat, listdir))
    seen: dict[str, SegmentFile] = {}
    for f in files:
        seen.setdefault(f.path, f)
    files = sorted(seen.values(), key=lambda f: (f.log_partition, f.path))
    unknown_dirs = {f.path.rsplit("/", 1)[0] for f in files if f.log_partition == UNKNOWN_PARTITION}
    if len(unknown_dirs) > 1:
        raise UsageError(
            "segments of unknown partition in several directories "
            f"({', '.join(sorted(unknown_dirs))}): put each partition's segments in a directory "
            "named __consumer_offsets-N"
        )
    return files


def _hadoop_fs(spark: Any, uri: str):
    """stat/listdir over the JVM Hadoop FileSystem of ``uri`` (hdfs://, s3a://, ...)."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    Path = jvm.org.apache.hadoop.fs.Path

    def fs_of(p: str):
        return Path(p).getFileSystem(conf)

    def stat(p: str):
        try:
            st = fs_of(p).getFileStatus(Path(p))
        except Exception as exc:  # noqa: BLE001 - py4j wraps FileNotFoundException
            if "FileNotFoundException" in str(exc):
                return None
            raise InputError(f"{p}: cannot list: {str(exc).splitlines()[0]}") from None
        return (bool(st.isDirectory()), int(st.getLen()))

    def listdir(p: str):
        out = []
        for st in fs_of(p).listStatus(Path(p)):
            out.append((st.getPath().getName(), bool(st.isDirectory()), int(st.getLen())))
        return out

    return stat, listdir


# ---- executors ---------------------------------------------------------------------------
class RangeReader:
    """Random access to one file: ``read(pos, n)``; local files memory-mapped."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._mm = None
        self._fh = None
        if is_local(path):
            import mmap

            lp = local_path(path)
            try:
                fd = os.open(lp, os.O_RDONLY)
            except OSError as exc:
                raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
            try:
                size = os.fstat(fd).st_size
                self.size = size
                self._mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ) if size else b""
            finally:
                os.close(fd)
        else:
            fs, p = _arrow_fs(path)
            self._fh = fs.open_input_file(p)
            self.size = self._fh.size()

    @property
    def data(self) -> Any:
        """The whole file as a buffer (local files only: an mmap)."""
        return self._mm

    def read(self, pos: int, n: int) -> bytes:
        if self._mm is not None:
            return bytes(self._mm[pos : pos + n])
        return self._fh.read_at(n, pos)  # type: ignore[union-attr]

    def close(self) -> None:
        if self._mm is not None and hasattr(self._mm, "close"):
            try:
                self._mm.close()
            except BufferError:
                pass
        if self._fh is not None:
            self._fh.close()

    def __enter__(self) -> RangeReader:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _arrow_fs(uri: str):
    import pyarrow.fs as pafs

    u = urlparse(uri)
    if u.scheme in ("s3a", "s3n", "s3"):
        fs, p = pafs.FileSystem.from_uri("s3://" + uri.split("://", 1)[1])
        return fs, p
    return pafs.FileSystem.from_uri(uri)
