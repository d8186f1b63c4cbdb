"""decode-batch's decisions about partition directory files, as domain functions (the CLI only
renders): which inputs are segments, what --verify checks, where a seek starts, which inputs
get an overview."""

from __future__ import annotations

import os

import pytest

from kgtool.errors import UsageError
from kgtool.storage.files import split_inputs
from kgtool.storage.overview import overviews
from kgtool.storage.seek import plan
from kgtool.storage.verify import verify_paths
from tests.storage.dirs import broker_dir


@pytest.fixture(scope="module")
def partition(tmp_path_factory):
    return str(broker_dir(tmp_path_factory.mktemp("dispatch")))


def _first(d: str, suffix: str) -> str:
    return os.path.join(d, sorted(n for n in os.listdir(d) if n.endswith(suffix))[0])


def test_split_inputs(partition):
    index = _first(partition, ".index")
    assert split_inputs([partition, index, "-"], files=False, summary=False) == ([partition, "-"], [index])
    segs, others = split_inputs([partition], files=True, summary=False)
    assert segs == [partition] and index in others and not any(o.endswith(".log") for o in others)
    with pytest.raises(UsageError, match="--summary reads segments"):
        split_inputs([index], files=False, summary=True)


def test_verify_paths(partition):
    whole = verify_paths([partition])
    by_index = verify_paths([_first(partition, ".index")])  # stands for its segment
    assert whole.count == 0 and by_index.count == 0 and whole.checked and by_index.checked
    for bad in (["-"], [_first(partition, ".snapshot")], []):
        with pytest.raises(UsageError):
            verify_paths(bad)


def test_seek_plan(partition):
    segments, res = plan([partition], from_offset=0, from_time=None)
    assert len(segments) > 1 and (res.segment, res.offset) == (0, 0)
    _segments, none = plan([partition], from_offset=10**12, from_time=None)
    assert none.segment is None  # past the log end: nothing to print
    for kw in (dict(from_offset=1, from_time="0"), dict(refused=True), dict(hex_text=True)):
        with pytest.raises(UsageError):
            plan([partition], **{"from_offset": None, "from_time": None, **kw})
    with pytest.raises(UsageError):
        plan([partition, partition], from_offset=0, from_time=None)


def test_overviews_only_of_directories(partition):
    got = overviews([partition, _first(partition, ".log"), "-"], [])
    assert [o.directory for o in got] == [partition] and got[0].segments
