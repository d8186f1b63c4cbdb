"""Files read and written whole around the page cache (``O_DIRECT``), through buffers a process
reuses: a data partition's cold segments, and the lag phase's exchange files.

When the questions asked of a data partition read most of a segment that is not in the page
cache (the lag of a thin topic: a question in every batch), reading it through a mapping fills
the page cache with all of it: a fresh page of memory for each 4 KiB read, which the kernel
must find, zero or evict, and which pushes out what other programs keep cached (on a broker's
machine, its hot segments). kgtool reads such a segment instead with ``O_DIRECT`` into a buffer
lent by a per-process pool, and gives the buffer back when the partition is done
(:meth:`kgtool.storage.list_offsets.PartitionLog.close`): a scan that reads cold data once
leaves the page cache as it found it, as PostgreSQL's ring buffers do for bulk reads
(``src/backend/storage/buffer/README``, "Buffer Ring Replacement Strategy").

A segment mostly in the page cache already, or read only in small parts (the walks' ranges under
:data:`WHOLE_SHARE` of it), or larger than :data:`MAX_BYTES`, is read through its mapping as
before; so is every segment where ``O_DIRECT`` is refused (tmpfs, some network file systems,
other systems than Linux). The bytes are the same either way.

The lag phase's exchange files (:meth:`kgtool.offsets.lag_input.LagInput.write`, 8 bytes a
commit, written by the offsets-log tasks and read once by the lag tasks) go the same way
(:func:`write_whole`, then :func:`read_whole`): written through the page cache, a GiB of them cost
2.5 s of CPU on that machine, against 0.03 s with ``O_DIRECT`` (0.33 s waiting for the disk).

The pool also lends an offsets-log task's :class:`Arena` (the lag inputs it keeps until it
ends): given back when the task is done, those pages are the next task's, or its lag task's
segments read whole, already mapped (on the lag benchmark, a lag task's first partitions took
30,000-38,000 page faults instead of 47,000-52,000).

Measured on the lag benchmark's data topic (64 partitions of 64 MiB, dropped from the page cache
before, a machine whose fresh pages are dear: a virtual machine handing free memory back to its
host): the answers of a partition took 0.037 s of CPU while fresh pages lasted and 0.145 s after,
against 0.014 s read whole into a reused buffer.
"""

from __future__ import annotations

import mmap
import os
import threading
from typing import Any

#: Segments at most this large are read whole (a buffer this large per partition in flight).
MAX_BYTES = 256 << 20
#: ...when the walks will read at least this share of the segment,
WHOLE_SHARE = 0.5
#: ...and less than this share of it is in the page cache.
CACHED_SHARE = 0.5
#: Bytes asked for per read or write (the size of the buffer a write goes through).
CHUNK = 8 << 20
#: Idle buffers a process keeps for the next partitions.
KEEP = 4
#: Bytes a process holds read whole at once, at most (past it, segments are read through their
#: mappings): the partitions in flight of a lag task, whatever their segments' sizes.
BUDGET = 768 << 20
#: ``O_DIRECT`` where the platform has it with ``preadv``/``pwritev`` (Linux, the BSDs); None
#: elsewhere (macOS, Windows): every read and write then goes through the page cache.
O_DIRECT: int | None = getattr(os, "O_DIRECT", None) if hasattr(os, "preadv") and hasattr(os, "pwritev") else None

#: O_DIRECT's alignment of offsets, lengths and addresses (a page: the strictest devices' block).
ALIGN = mmap.PAGESIZE
#: The buffers an :class:`Arena` takes from the pool (its pages mapped only as they are written).
ARENA_BLOCK = 128 << 20

_lock = threading.RLock()  # reentrant: a Lease collected (__del__) while the lock is held
_idle: list[mmap.mmap] = []
_leased = 0  # bytes of the leases not given back
_libc: Any = None


def _mincore() -> Any:
    """libc's mincore(2) through ctypes, or None (not Linux or glibc-like)."""
    global _libc
    if _libc is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            fn = libc.mincore
            fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
            fn.restype = ctypes.c_int
            _libc = fn
        except (OSError, AttributeError):
            _libc = False
    return _libc or None


def cached_share(data: Any) -> float | None:
    """The share of a mapped file's pages in the page cache (mincore(2)); None when not known."""
    if not isinstance(data, mmap.mmap) or not len(data):
        return None
    fn = _mincore()
    if fn is None:
        return None
    import ctypes

    import numpy as np

    view = np.frombuffer(data, np.uint8)  # the mapping's address (read-only mappings too)
    try:
        pages = (len(data) + ALIGN - 1) // ALIGN
        vec = ctypes.create_string_buffer(pages)
        if fn(ctypes.c_void_p(view.ctypes.data), len(data), vec) != 0:
            return None
        return int(np.count_nonzero(np.frombuffer(vec.raw, np.uint8) & 1)) / pages
    finally:
        del view


def worth_reading_whole(data: Any, wanted: int) -> bool:
    """Whether a segment mapped as ``data`` whose walks read ``wanted`` of its bytes is better
    read whole around the page cache (see the module's docstring)."""
    size = len(data) if isinstance(data, mmap.mmap) else 0
    if not size or size > MAX_BYTES or O_DIRECT is None or wanted < WHOLE_SHARE * size:
        return False
    share = cached_share(data)
    return share is not None and share < CACHED_SHARE


class Lease:
    """A segment's bytes read whole into a pooled buffer: ``view`` (its length the file's) until
    :meth:`release` gives the buffer back."""

    def __init__(self, buffer: mmap.mmap, size: int) -> None:
        self._buffer: mmap.mmap | None = buffer
        self.view: memoryview | None = memoryview(buffer)[:size]

    def __del__(self) -> None:  # never released (a log not closed): out of the budget at least
        global _leased
        if getattr(self, "_buffer", None) is not None:
            with _lock:
                _leased -= len(self._buffer)

    def release(self) -> None:
        """Give the buffer back to the pool; the view must not be used after."""
        global _leased
        buf, self._buffer = self._buffer, None
        if buf is None:
            return
        with _lock:
            _leased -= len(buf)
        view, self.view = self.view, None
        try:
            view.release()
        except BufferError:  # something still holds the bytes (a walk on another thread): not reused
            return
        _give_back(buf)


def _give_back(buf: mmap.mmap) -> None:
    with _lock:
        _idle.append(buf)
        _idle.sort(key=len)
        while len(_idle) > KEEP:
            try:
                _idle.pop(0).close()  # the smallest
            except BufferError:  # still viewed somewhere: its memory goes when the views do
                pass


class Arena:
    """Arrays a task keeps until it ends, carved from this pool's buffers (:data:`ARENA_BLOCK`
    bytes each, or more for a larger array) and given back to it with :meth:`release`: what
    the task touched is then already mapped for the next user of the pool in this process (the
    next task's arena, a lag task's segments read whole). On a machine whose fresh pages are
    dear (see the module's note), that memory is paid for once a Python worker, not once a
    task."""

    def __init__(self) -> None:
        self._buffers: list[mmap.mmap] = []
        self._at = 0

    def array(self, n: int, dtype: Any) -> Any:
        """An uninitialised NumPy array of ``n`` elements of ``dtype`` in the arena."""
        import numpy as np

        dtype = np.dtype(dtype)
        nbytes = n * dtype.itemsize
        if not self._buffers or self._at + nbytes > len(self._buffers[-1]):
            self._buffers.append(_buffer(max(ARENA_BLOCK, -(-nbytes // ALIGN) * ALIGN)))
            self._at = 0
        out = np.frombuffer(self._buffers[-1], dtype, n, self._at)
        self._at += -(-nbytes // 64) * 64
        return out

    def release(self) -> None:
        """The buffers back to the pool: no array of the arena may be used after."""
        buffers, self._buffers, self._at = self._buffers, [], 0
        for buf in buffers:
            _give_back(buf)


def _buffer(need: int, budget: bool = False) -> mmap.mmap | None:
    """A pooled buffer of at least ``need`` bytes (counted against :data:`BUDGET` with
    ``budget``: None past it)."""
    global _leased
    with _lock:
        i = next((i for i, buf in enumerate(_idle) if len(buf) >= need), None)
        size = len(_idle[i]) if i is not None else need
        if budget:
            if _leased + size > BUDGET:
                return None
            _leased += size
        if i is not None:
            return _idle.pop(i)
    return mmap.mmap(-1, need)  # page-aligned, as O_DIRECT wants


def read_whole(path: str, size: int) -> Lease | None:
    """``path``'s ``size`` bytes read with ``O_DIRECT`` into a pooled buffer; None when the file
    system refuses it, the file is no longer that long or the process holds :data:`BUDGET` read
    whole already (the caller reads through its mapping)."""
    if O_DIRECT is None:  # not on this platform: the caller reads through its mapping
        return None
    need = -(-size // ALIGN) * ALIGN
    buf = _buffer(need, budget=True)
    if buf is None:  # the process holds enough read whole already
        return None
    lease = Lease(buf, size)
    try:
        fd = os.open(path, os.O_RDONLY | O_DIRECT)
    except OSError:  # EINVAL: the file system does not do O_DIRECT
        lease.release()
        return None
    try:
        view = memoryview(buf)
        done = 0
        while done < size:
            n = os.preadv(fd, [view[done:min(need, done + CHUNK)]], done)
            if n <= 0:
                break
            done += n
            if n % ALIGN and done < size:
                break  # a short read inside the file: O_DIRECT cannot carry on from there
        view.release()
    except OSError:
        done = -1
    finally:
        os.close(fd)
    if done < size:
        lease.release()
        return None
    return lease


def write_whole(path: str, parts: list[Any]) -> None:
    """Write the bytes of ``parts`` (buffers) one after the other as the file ``path``
    (created or truncated), with ``O_DIRECT`` through a pooled buffer of :data:`CHUNK` bytes (the
    last block padded, then the file cut to its length); through the page cache where
    ``O_DIRECT`` is refused."""
    views = [memoryview(p).cast("B") for p in parts]
    try:
        if O_DIRECT is None:  # not on this platform
            raise OSError("no O_DIRECT")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | O_DIRECT, 0o644)
    except OSError:  # EINVAL: the file system does not do O_DIRECT
        with open(path, "wb") as fh:
            for v in views:
                fh.write(v)
        return
    buf = _buffer(CHUNK)
    stage = memoryview(buf)
    try:
        at = fill = 0  # the file's bytes written; the buffer's bytes filled

        def flush(n: int) -> None:
            done = 0
            while done < n:
                wrote = os.pwritev(fd, [stage[done:n]], at + done)
                if wrote <= 0:  # a device that takes nothing: an error, not a spin
                    raise OSError(f"{path}: the write at byte {at + done} took nothing")
                done += wrote

        for v in views:
            i = 0
            while i < len(v):
                k = min(len(v) - i, CHUNK - fill)
                stage[fill:fill + k] = v[i:i + k]
                fill, i = fill + k, i + k
                if fill == CHUNK:
                    flush(CHUNK)
                    at, fill = at + CHUNK, 0
        if fill:
            padded = -(-fill // ALIGN) * ALIGN
            stage[fill:padded] = bytes(padded - fill)
            flush(padded)
            os.ftruncate(fd, at + fill)
    finally:
        os.close(fd)
        stage.release()
        for v in views:
            v.release()
        _give_back(buf)
