"""Input resolution on the driver, byte-range reading in executors.

Accepted inputs: broker log directories (their ``__consumer_offsets-N`` subdirectories are
used), ``__consumer_offsets-N`` directories, and segment files (``*.log``). Index files,
snapshots and files being deleted or cleaned (``.index``, ``.timeindex``, ``.snapshot``,
``.txnindex``, ``.deleted``, ``.cleaned``, ``.swap``) are not segments and are ignored.

Local paths are listed with ``os`` and read with ``mmap``. ``s3a://`` (and ``s3://``,
``s3n://``) are listed on the driver and read by executors with pyarrow's S3 client, configured
from the Hadoop configuration's ``fs.s3a.endpoint``, ``fs.s3a.access.key``,
``fs.s3a.secret.key``, ``fs.s3a.session.token``, ``fs.s3a.endpoint.region`` and
``fs.s3a.connection.ssl.enabled`` (``--conf spark.hadoop.fs.s3a.endpoint=...``), else from the
usual AWS environment / profile / instance role; no hadoop-aws jar is needed. Other URIs
(``hdfs://``, ``gs://``, ``abfs://`` ...) are listed through the JVM's Hadoop ``FileSystem``
API (every filesystem Spark is configured for) and read through ``pyarrow.fs``: ``hdfs://``
needs libhdfs (``HADOOP_HOME``/``ARROW_LIBHDFS_DIR`` and the Hadoop classpath) on every
executor. Executors read only their byte range (at most one split plus one batch), never a
whole file.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

from kgtool.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC
from kgtool.errors import InputError, UsageError
from kgtool.offsets.coverage import SegmentFile
from kgtool.storage.files import live_partition_of_dir, live_partition_of_path
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


def _resolve(path: str, stat, listdir, empty: set[int] | None = None) -> list[SegmentFile]:
    """Shared logic: ``stat(p) -> (is_dir, size) | None``, ``listdir(p) -> [(name, is_dir, size)]``.
    ``__consumer_offsets-N`` directories without a segment add N to ``empty``."""
    st = stat(path)
    if st is None:
        raise InputError(f"{path}: no such file or directory")
    is_dir, size = st
    if not is_dir:
        part = live_partition_of_path(path, CONSUMER_OFFSETS_TOPIC)
        return [SegmentFile(path=path, size=size, log_partition=UNKNOWN_PARTITION if part is None else part)]
    base = path.rstrip("/")
    name = base.rsplit("/", 1)[-1]
    entries = listdir(path)
    live = live_partition_of_dir(name, CONSUMER_OFFSETS_TOPIC)
    if live is not None:
        found = _segments_in(base, [(n, s) for n, d, s in entries if not d], live)
        if not found and empty is not None:
            empty.add(live)
        return found
    out: list[SegmentFile] = []
    partition_dirs = 0
    for n, d, _s in sorted(entries):
        pn = live_partition_of_dir(n, CONSUMER_OFFSETS_TOPIC) if d else None
        if pn is not None:
            partition_dirs += 1
            sub = f"{base}/{n}"
            found = _segments_in(sub, [(x, s) for x, dd, s in listdir(sub) if not dd], pn)
            if not found and empty is not None:
                empty.add(pn)
            out.extend(found)
    if out or (partition_dirs and empty is not None):
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


S3_SCHEMES = ("s3a", "s3n", "s3")
#: Hadoop S3A settings carried over to pyarrow's S3 client.
S3A_KEYS = (
    "fs.s3a.endpoint",
    "fs.s3a.access.key",
    "fs.s3a.secret.key",
    "fs.s3a.session.token",
    "fs.s3a.endpoint.region",
    "fs.s3a.connection.ssl.enabled",
)


def is_s3(path: str) -> bool:
    return urlparse(path).scheme in S3_SCHEMES


def storage_options(spark: Any) -> dict[str, str]:
    """The ``fs.s3a.*`` settings (:data:`S3A_KEYS`) of Spark's Hadoop configuration, shipped
    to the executors with each task."""
    if spark is None:
        return {}
    conf = spark._jsc.hadoopConfiguration()
    out = {}
    for key in S3A_KEYS:
        v = conf.get(key)
        if v is not None and str(v) != "":
            out[key] = str(v)
    return out


def s3_filesystem(options: dict[str, str] | None = None) -> Any:
    """pyarrow's ``S3FileSystem`` configured like Hadoop's S3A client from ``options``."""
    import pyarrow.fs as pafs

    o = options or {}
    kw: dict[str, Any] = {}
    endpoint = o.get("fs.s3a.endpoint")
    if endpoint:
        if "://" in endpoint:
            u = urlparse(endpoint)
            kw["scheme"], kw["endpoint_override"] = u.scheme, u.netloc
        else:
            ssl = o.get("fs.s3a.connection.ssl.enabled", "true").strip().lower() != "false"
            kw["scheme"], kw["endpoint_override"] = ("https" if ssl else "http"), endpoint.rstrip("/")
    if o.get("fs.s3a.access.key"):
        kw["access_key"] = o["fs.s3a.access.key"]
        kw["secret_key"] = o.get("fs.s3a.secret.key", "")
        if o.get("fs.s3a.session.token"):
            kw["session_token"] = o["fs.s3a.session.token"]
    if o.get("fs.s3a.endpoint.region"):
        kw["region"] = o["fs.s3a.endpoint.region"]
    return pafs.S3FileSystem(**kw)


def _s3_path(uri: str) -> str:
    """``s3a://bucket/key`` -> ``bucket/key`` (pyarrow's S3 paths)."""
    return uri.split("://", 1)[1].rstrip("/")


def _s3_listing(uri: str, options: dict[str, str]):
    """stat/listdir over pyarrow's S3 client."""
    import pyarrow.fs as pafs

    try:
        fs = s3_filesystem(options)
    except (OSError, ValueError) as exc:
        raise InputError(f"{uri}: cannot open S3: {exc}") from None

    def stat(p: str):
        try:
            info = fs.get_file_info(_s3_path(p))
        except OSError as exc:
            raise InputError(f"{p}: cannot list: {str(exc).splitlines()[0]}") from None
        if info.type == pafs.FileType.NotFound:
            return None
        return (info.type == pafs.FileType.Directory, int(info.size or 0))

    def listdir(p: str):
        try:
            infos = fs.get_file_info(pafs.FileSelector(_s3_path(p)))
        except OSError as exc:
            raise InputError(f"{p}: cannot list: {str(exc).splitlines()[0]}") from None
        return [(i.base_name, i.type == pafs.FileType.Directory, int(i.size or 0)) for i in infos]

    return stat, listdir


def resolve_inputs(paths: list[str], spark: Any = None, empty: set[int] | None = None) -> list[SegmentFile]:
    """The segment files named by ``paths`` (sorted by partition, then path). With ``empty``,
    the partitions of ``__consumer_offsets-N`` directories that hold no segment are added to it
    (they are audited as empty partitions) instead of being an error.

    Raises:
        InputError: a path is missing or holds no segment.
        UsageError: segments of unknown partition come from more than one directory (their
            offsets cannot be told apart: name the directories ``__consumer_offsets-N``).
    """
    files: list[SegmentFile] = []
    for p in paths:
        if is_local(p):
            lp = local_path(p)
            files.extend(_resolve(lp, _local_stat, _local_listdir, empty))
        elif is_s3(p):
            stat, listdir = _s3_listing(p, storage_options(spark))
            files.extend(_resolve(p.rstrip("/"), stat, listdir, empty))
        else:
            if spark is None:
                raise UsageError(f"{p}: a remote path needs a Spark session")
            stat, listdir = _hadoop_fs(spark, p)
            files.extend(_resolve(p, stat, listdir, empty))
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

    def __init__(self, path: str, storage: dict[str, str] | None = None) -> None:
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
            try:
                fs, p = _arrow_fs(path, storage)
                self._fh = fs.open_input_file(p)
                self.size = self._fh.size()
            except (OSError, ValueError) as exc:
                raise InputError(f"{path}: cannot read: {str(exc).splitlines()[0]}") from None

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


def _arrow_fs(uri: str, storage: dict[str, str] | None = None):
    import pyarrow.fs as pafs

    if is_s3(uri):
        return s3_filesystem(storage), _s3_path(uri)
    return pafs.FileSystem.from_uri(uri)
