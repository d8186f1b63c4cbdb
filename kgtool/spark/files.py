"""Input resolution on the driver, byte-range reading in executors.

Accepted inputs: broker log directories (their ``__consumer_offsets-N`` subdirectories are
used), ``__consumer_offsets-N`` directories, and segment files (``*.log``). Index files,
snapshots and files being deleted or cleaned (``.index``, ``.timeindex``, ``.snapshot``,
``.txnindex``, ``.deleted``, ``.cleaned``, ``.swap``) are not segments and are ignored.

Partition directories of other topics (``orders-3/``, named as ``LocalLog`` names them, holding
a ``partition.metadata``), given as inputs or inside a broker log directory, are never audited:
their ``partition.metadata`` (``PartitionMetadataFile``: ``version: 0``, ``topic_id: <Uuid>``)
names their topic's id (:class:`TopicIds`), for the groups whose records give topic ids without
names (KIP-848 records of brokers that no longer write ``ConsumerGroupPartitionMetadata``).

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
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlparse

from kgtool.coordinator.partitioning import CONSUMER_OFFSETS_TOPIC
from kgtool.errors import InputError, UsageError
from kgtool.offsets.coverage import SegmentFile
from kgtool.storage.files import live_partition_of_dir, live_partition_of_path, topic_partition_of_dir

UNKNOWN_PARTITION = -1
PARTITION_METADATA = "partition.metadata"  # PartitionMetadataFile.PARTITION_METADATA_FILE_NAME
#: A live partition directory per topic is read (all hold the same id); a topic's directories are
#: tried up to this many times when their file is missing. Each -delete/-future/-stray copy is
#: read (a deleted topic's id differs), up to MAX_SUFFIXED_READS in all.
TRIES_PER_TOPIC = 3
MAX_SUFFIXED_READS = 1000
#: Larger than any partition.metadata (two short lines): not one.
MAX_PARTITION_METADATA_BYTES = 4096


@dataclass
class DataDir:
    """A partition directory of a topic other than ``__consumer_offsets``."""

    path: str
    topic: str
    live: bool  # not a -delete / -future / -stray copy


@dataclass
class TopicIds:
    """Topic id -> name, from the ``partition.metadata`` files of the data partition directories
    among the inputs; ``problems``: one line per file that could not be used (its ids stay ids)."""

    names: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    directories: int = 0  # data partition directories found
    #: (topic, partition) -> its live local directories (copies from several brokers): lag's inputs
    partitions: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    #: one line per __consumer_offsets partition found in several directories (several brokers'
    #: log dirs): the copy read and how much shorter the others are
    copies: list[str] = field(default_factory=list)
    #: live partition directories of other topics on a remote filesystem (named, not read:
    #: lag and __share_group_state replay read local directories only)
    remote: list[tuple[tuple[str, int], str]] = field(default_factory=list)

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The names as sorted (id, name) pairs (:attr:`AuditOptions.topic_names`)."""
        return tuple(sorted(self.names.items()))


def _data_dir(path: str, name: str) -> DataDir | None:
    """``path`` (named ``name``) as a partition directory of a topic other than
    ``__consumer_offsets`` (``LocalLog.parseTopicPartitionName``), or None."""
    tp = topic_partition_of_dir(name)
    if tp is None or tp[0] == CONSUMER_OFFSETS_TOPIC:
        return None
    return DataDir(path, tp[0], live_partition_of_dir(name, tp[0]) is not None)


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


def _resolve(path: str, stat, listdir, empty: set[int] | None = None,
             data_dirs: list[DataDir] | None = None) -> list[SegmentFile]:
    """Shared logic: ``stat(p) -> (is_dir, size) | None``, ``listdir(p) -> [(name, is_dir, size)]``.
    ``__consumer_offsets-N`` directories without a segment add N to ``empty``; partition
    directories of other topics (:class:`DataDir`) go to ``data_dirs``, never audited."""
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
    data = _data_dir(base, name)
    if data is not None and any(n == PARTITION_METADATA and not d for n, d, _s in entries):
        # a data topic's partition (its partition.metadata says so): topic names, not an offsets log
        if data_dirs is not None:
            data_dirs.append(data)
        return []
    out: list[SegmentFile] = []
    partition_dirs = 0
    others = 0
    for n, d, _s in sorted(entries):
        pn = live_partition_of_dir(n, CONSUMER_OFFSETS_TOPIC) if d else None
        if pn is not None:
            partition_dirs += 1
            sub = f"{base}/{n}"
            found = _segments_in(sub, [(x, s) for x, dd, s in listdir(sub) if not dd], pn)
            if not found and empty is not None:
                empty.add(pn)
            out.extend(found)
        elif d and data_dirs is not None:
            sub_data = _data_dir(f"{base}/{n}", n)
            if sub_data is not None:
                others += 1
                data_dirs.append(sub_data)
    if out or (partition_dirs and empty is not None):
        return out
    direct = _segments_in(base, [(n, s) for n, d, s in entries if not d], UNKNOWN_PARTITION)
    if direct:
        return direct
    if others:
        return []  # a broker log directory without __consumer_offsets: its data directories name topics
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


def resolve_inputs(paths: list[str], spark: Any = None, empty: set[int] | None = None,
                   topics: TopicIds | None = None) -> list[SegmentFile]:
    """The segment files named by ``paths`` (sorted by partition, then path). With ``empty``,
    the partitions of ``__consumer_offsets-N`` directories that hold no segment are added to it
    (they are audited as empty partitions) instead of being an error. With ``topics``, the
    ``partition.metadata`` files of the data partition directories among the inputs (given, or
    inside a broker log directory) are read into it (:func:`read_topic_ids`); without, such
    directories are skipped all the same.

    Raises:
        InputError: a path is missing or holds no segment.
        UsageError: segments of unknown partition come from more than one directory (their
            offsets cannot be told apart: name the directories ``__consumer_offsets-N``).
    """
    files: list[SegmentFile] = []
    data_dirs: list[DataDir] = []
    for p in paths:
        if is_local(p):
            lp = local_path(p)
            files.extend(_resolve(lp, _local_stat, _local_listdir, empty, data_dirs))
        elif is_s3(p):
            stat, listdir = _s3_listing(p, storage_options(spark))
            files.extend(_resolve(p.rstrip("/"), stat, listdir, empty, data_dirs))
        else:
            if spark is None:
                raise UsageError(f"{p}: a remote path needs a Spark session")
            stat, listdir = _hadoop_fs(spark, p)
            files.extend(_resolve(p, stat, listdir, empty, data_dirs))
    if topics is not None:
        for d in data_dirs:
            tp = topic_partition_of_dir(d.path.rstrip("/").rsplit("/", 1)[-1])
            if d.live and tp is not None and is_local(d.path):
                copies = topics.partitions.setdefault(tp, [])
                if local_path(d.path) not in copies:
                    copies.append(local_path(d.path))
            elif d.live and tp is not None:
                topics.remote.append((tp, d.path))
    if topics is not None and data_dirs:
        storage = storage_options(spark) if any(is_s3(d.path) for d in data_dirs) else {}
        found = read_topic_ids(data_dirs, lambda f: _read_small(f, storage))
        topics.names.update(found.names)
        topics.problems.extend(found.problems)
        topics.directories += found.directories
    seen: dict[str, SegmentFile] = {}
    for f in files:
        seen.setdefault(f.path, f)
    files = longest_copies(list(seen.values()), topics.copies if topics is not None else None)
    files = sorted(files, key=lambda f: (f.log_partition, f.path))
    unknown_dirs = {f.path.rsplit("/", 1)[0] for f in files if f.log_partition == UNKNOWN_PARTITION}
    if len(unknown_dirs) > 1:
        raise UsageError(
            "segments of unknown partition in several directories "
            f"({', '.join(sorted(unknown_dirs))}): put each partition's segments in a directory "
            "named __consumer_offsets-N"
        )
    return files


def longest_copies(files: list[SegmentFile], notes: list[str] | None = None) -> list[SegmentFile]:
    """One copy of each ``__consumer_offsets`` partition: a partition whose segments come from
    several directories holding segments of the same base offsets (the leader's and its
    followers' copies, from several brokers' log dirs) is read from the directory holding the most
    bytes (the first named on a tie), the others said in ``notes``: replaying two copies would
    replay every record twice. Directories whose segments do not overlap (an archive of old
    segments beside the live ones) are all read."""
    by_part: dict[int, dict[str, list[SegmentFile]]] = {}
    for f in files:
        by_part.setdefault(f.log_partition, {}).setdefault(f.path.rsplit("/", 1)[0], []).append(f)
    out: list[SegmentFile] = []
    for part, dirs in by_part.items():
        names = [{f.path.rsplit("/", 1)[1] for f in fs} for fs in dirs.values()]
        overlap = any(names[i] & names[j] for i in range(len(names)) for j in range(i + 1, len(names)))
        if part == UNKNOWN_PARTITION or len(dirs) == 1 or not overlap:
            # one directory, or segments split between directories (an archive and the live log)
            for fs in dirs.values():
                out.extend(fs)
            continue
        sizes = {d: sum(f.size for f in fs) for d, fs in dirs.items()}
        best = max(dirs, key=lambda d: (sizes[d], -list(dirs).index(d)))
        out.extend(dirs[best])
        if notes is not None:
            others = ", ".join(f"{d} ({sizes[best] - sizes[d]:,} bytes shorter)" for d in dirs if d != best)
            notes.append(f"__consumer_offsets-{part}: {len(dirs)} copies, read from {best} ({sizes[best]:,} bytes); "
                         f"not read: {others}")
    return out


def read_topic_ids(dirs: list[DataDir], read: Callable[[str], bytes | None]) -> TopicIds:
    """Topic id -> name from the ``partition.metadata`` of data partition directories: one live
    directory per topic (the others hold the same id; a topic's next directories are tried when
    the file is missing, :data:`TRIES_PER_TOPIC` in all), and every ``-delete``/``-future``/
    ``-stray`` copy (a topic deleted and created again had another id). ``read(path)`` gives a
    file's bytes, None when it does not exist. A file that does not parse
    (``PartitionMetadataReadBuffer``'s checks) is a problem line; its topic stays unnamed by it."""
    from kgtool.storage.checkpoints import read_partition_metadata
    from kgtool.storage.indexes import Problems

    out = TopicIds(directories=len(dirs))
    live: dict[str, list[str]] = {}
    suffixed: list[DataDir] = []
    for d in sorted(dirs, key=lambda d: d.path):
        if d.live:
            live.setdefault(d.topic, []).append(d.path)
        else:
            suffixed.append(d)
    candidates = [(topic, ps[:TRIES_PER_TOPIC]) for topic, ps in sorted(live.items())]
    candidates += [(d.topic, [d.path]) for d in suffixed[:MAX_SUFFIXED_READS]]
    for topic, tries in candidates:
        for directory in tries:
            path = f"{directory.rstrip('/')}/{PARTITION_METADATA}"
            try:
                data = read(path)
            except InputError as exc:
                out.problems.append(str(exc))
                continue
            if data is None:
                continue
            problems = Problems()
            meta = read_partition_metadata(path, data, problems)
            if problems.items:
                out.problems.extend(p.message for p in problems.items)
            elif meta.topic_id is not None:
                out.names.setdefault(meta.topic_id, topic)
            break
    return out


def _read_small(path: str, storage: dict[str, str], limit: int = MAX_PARTITION_METADATA_BYTES) -> bytes | None:
    """A small file's bytes (at most ``limit``), None when it does not exist."""
    if is_local(path):
        try:
            with open(local_path(path), "rb") as fh:
                return fh.read(limit)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        with RangeReader(path, storage) as rd:
            return rd.read(0, min(rd.size, limit))
    except InputError as exc:
        if "not found" in str(exc).lower() or "no such file" in str(exc).lower():
            return None
        raise


def cleaner_checkpoints(files: list[SegmentFile], spark: Any = None) -> tuple[tuple[tuple[int, int, str, int], ...], list[str]]:
    """The ``cleaner-offset-checkpoint`` entries of the ``__consumer_offsets`` partitions read
    (:mod:`kgtool.offsets.compaction`): the file of the broker log directory one level above each
    partition's ``__consumer_offsets-N`` directory (the copy read), as
    :attr:`AuditOptions.cleaner_checkpoints`, and the warnings of files that do not parse or
    are too large. Segments given alone (no ``__consumer_offsets-N`` directory) have none."""
    from kgtool.offsets.compaction import CLEANER_OFFSET_CHECKPOINT, MAX_CHECKPOINT_BYTES, read_cleaner_checkpoint

    log_dirs: dict[str, set[int]] = {}
    for f in files:
        directory, _, _name = f.path.rstrip("/").rpartition("/")
        parent, _, dir_name = directory.rpartition("/")
        if parent and live_partition_of_dir(dir_name, CONSUMER_OFFSETS_TOPIC) == f.log_partition:
            log_dirs.setdefault(parent, set()).add(f.log_partition)
    entries: list[tuple[int, int, str, int]] = []
    warnings: list[str] = []
    storage = storage_options(spark) if any(is_s3(d) for d in log_dirs) else {}
    for log_dir, parts in sorted(log_dirs.items()):
        path = f"{log_dir}/{CLEANER_OFFSET_CHECKPOINT}"
        try:
            data = _read_small(path, storage, MAX_CHECKPOINT_BYTES + 1)
        except InputError as exc:
            warnings.append(f"{exc}: the log's own signs of cleaning are used")
            continue
        if data is None:
            continue
        if len(data) > MAX_CHECKPOINT_BYTES:
            warnings.append(f"{path}: larger than {MAX_CHECKPOINT_BYTES:,} bytes: not a checkpoint file; the "
                            "log's own signs of cleaning are used")
            continue
        found, problems = read_cleaner_checkpoint(path, data)
        warnings.extend(problems)
        entries.extend((p, ck.offset, ck.path, ck.line) for p, ck in sorted(found.items()) if p in parts)
    return tuple(entries), warnings


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
                fs, p = arrow_fs(path, storage)
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


def arrow_fs(uri: str, storage: dict[str, str] | None = None):
    """(the pyarrow file system serving ``uri``, the path in it): S3 with ``storage``'s settings, HDFS, local."""
    import pyarrow.fs as pafs

    if is_s3(uri):
        return s3_filesystem(storage), _s3_path(uri)
    return pafs.FileSystem.from_uri(uri)
