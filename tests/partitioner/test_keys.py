"""Key formats (Kafka's serializers) and the line scanner: the compiled twin against the pure one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.errors import InputError
from kgtool.partitioner import keys
from kgtool.partitioner.keys import KeyFormat, KeyFormatError, KeySource, scan_keys, serialize_key
from kgtool.partitioner.rules import HashFamily
from tests.twins import compiled, have_compiled

ALL_FAMILIES = [HashFamily.MURMUR2, HashFamily.CRC32, HashFamily.FNV1A]

@pytest.mark.parametrize(
    "fmt, text, expected",
    [
        (KeyFormat.string, "é", b"\xc3\xa9"),
        (KeyFormat.hex, "00FFab", b"\x00\xff\xab"),
        (KeyFormat.hex, "", b""),
        (KeyFormat.base64, "AAE=", b"\x00\x01"),
        (KeyFormat.base64, "AAE", b"\x00\x01"),
        (KeyFormat.base64, "", b""),
        # LongSerializer / IntegerSerializer: big-endian two's complement.
        (KeyFormat.long, "1", b"\x00" * 7 + b"\x01"),
        (KeyFormat.long, "-1", b"\xff" * 8),
        (KeyFormat.long, "-9223372036854775808", b"\x80" + b"\x00" * 7),
        (KeyFormat.long, "+0042", b"\x00" * 7 + b"\x2a"),
        (KeyFormat.int, "-2147483648", b"\x80\x00\x00\x00"),
        (KeyFormat.int, "2147483647", b"\x7f\xff\xff\xff"),
        # UUIDSerializer writes uuid.toString(): lowercase text, not 16 bytes.
        (KeyFormat.uuid, "123E4567-E89B-12D3-A456-426614174000", b"123e4567-e89b-12d3-a456-426614174000"),
    ],
)
def test_serialize_key(fmt, text, expected):
    assert serialize_key(text.encode(), fmt) == expected


@pytest.mark.parametrize(
    "fmt, text",
    [
        (KeyFormat.string, b"\xff"),
        (KeyFormat.string, b"\xed\xa0\x80"),  # a surrogate
        (KeyFormat.hex, b"abc"),
        (KeyFormat.hex, b"0x00"),
        (KeyFormat.hex, b"zz"),
        (KeyFormat.base64, b"A"),
        (KeyFormat.base64, b"AA="),
        (KeyFormat.base64, b"A==="),
        (KeyFormat.base64, b"AA-_"),
        (KeyFormat.long, b"9223372036854775808"),
        (KeyFormat.long, b"1e3"),
        (KeyFormat.long, b" 1"),
        (KeyFormat.long, b"-"),
        (KeyFormat.int, b"2147483648"),
        (KeyFormat.int, b"0x10"),
        (KeyFormat.uuid, b"123e4567e89b12d3a456426614174000"),
        (KeyFormat.uuid, b"123e4567-e89b-12d3-a456-42661417400g"),
    ],
)
def test_bad_text_is_rejected_by_both_twins(fmt, text):
    with pytest.raises(KeyFormatError):
        serialize_key(text, fmt)
    first = _VALID[fmt] + b"\n"
    for scan in _twins():
        r = _run(scan, first + text + b"\n", fmt, skip_empty=True)
        assert r[1:5] == (1, 1, fmt.code + 1, len(first)), (scan, r)


_VALID = {
    KeyFormat.string: b"ok", KeyFormat.hex: b"00", KeyFormat.base64: b"AA", KeyFormat.long: b"1",
    KeyFormat.int: b"2", KeyFormat.uuid: b"123e4567-e89b-12d3-a456-426614174000",
}


def _twins():
    twins = [keys.scan_lines_py]
    if have_compiled("kgtool.partitioner._speedups"):
        twins.append(keys._speedups.scan_lines)
    return twins


def _run(scan, data, fmt, *, skip_empty=None, marker=None, max_keys=64):
    fams = bytes(int(f) for f in ALL_FAMILIES)
    h = np.zeros((3, max_keys), np.uint32)
    k = np.zeros(max_keys, np.uint8)
    s = np.zeros(2 * max_keys, np.int64)
    if skip_empty is None:
        skip_empty = fmt.skips_empty_lines
    r = scan(data, 0, len(data), fmt.code, skip_empty, marker, fams, h, k, s, max_keys)
    n = r[1]
    return (*r, h[:, :n].tolist(), k[:n].tolist(), s[: 2 * n].tolist())


_LINE_BYTES = st.sampled_from(
    [b"a", b"0", b"1", b"-", b"+", b"=", b"f", b"F", b"\r", b"\n", b"\n", b"\xc3", b"\xa9", b"\xff", b"\x00",
     b"A", b"/", b"ab", b"42", b"NULL", b"123e4567-e89b-12d3-a456-426614174000"]
)


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(_LINE_BYTES, max_size=40),
    fmt=st.sampled_from(list(KeyFormat)),
    marker=st.sampled_from([None, b"NULL", b""]),
    max_keys=st.integers(1, 8),
)
def test_twins_agree(parts, fmt, marker, max_keys):
    assert keys._speedups is compiled("kgtool.partitioner._speedups")
    data = b"".join(parts)
    a = _run(keys._speedups.scan_lines, data, fmt, marker=marker, max_keys=max_keys)
    b = _run(keys.scan_lines_py, data, fmt, marker=marker, max_keys=max_keys)
    assert a == b


def test_twins_agree_on_long_keys():
    assert keys._speedups is compiled("kgtool.partitioner._speedups")
    data = b"\n".join(bytes([i % 251]) * n for i, n in enumerate([0, 1, 2, 3, 4, 5, 7, 8, 9, 63, 64, 1000, 70000]))
    hexdata = b"\n".join(x.hex().encode() for x in data.split(b"\n"))
    assert _run(keys._speedups.scan_lines, hexdata, KeyFormat.hex) == _run(keys.scan_lines_py, hexdata, KeyFormat.hex)


def _scan_all(data: bytes, fmt: KeyFormat, **kw) -> tuple[list[list[int]], list[int], list]:
    src = KeySource("keys.txt", data=data)
    hashes: list[list[int]] = [[], [], []]
    kinds: list[int] = []
    texts: list = []
    for chunk in scan_keys([src], fmt, ALL_FAMILIES, with_texts=True, **kw):
        for f in range(3):
            hashes[f] += chunk.hashes[f].tolist()
        kinds += chunk.kinds.tolist()
        texts += chunk.texts
    return hashes, kinds, texts


def test_chunks_give_the_same_keys_as_one_pass():
    data = b"".join(f"order-{i}\n".encode() for i in range(1000)) + b"last"
    assert _scan_all(data, KeyFormat.string, chunk_keys=7) == _scan_all(data, KeyFormat.string)
    assert len(_scan_all(data, KeyFormat.string)[1]) == 1001


def test_empty_lines_skipped_in_text_formats_but_keys_in_hex_and_base64():
    _, kinds, texts = _scan_all(b"a\n\nb\r\n\r\n", KeyFormat.string)
    assert texts == ["a", "b"] and kinds == [0, 0]
    _, kinds, texts = _scan_all(b"00\n\n01\n", KeyFormat.hex)
    assert texts == ["00", "", "01"] and kinds == [0, 1, 0]
    _, kinds, texts = _scan_all(b"\n", KeyFormat.base64)
    assert texts == [""] and kinds == [1]


def test_only_the_terminator_is_removed():
    _, _, texts = _scan_all(b" a \r\nb\r\rc\r", KeyFormat.string)
    assert texts == [" a ", "b\r\rc\r"]


def test_null_marker():
    chunks = list(scan_keys([KeySource("k", data=b"00\nNULL\n01\n")], KeyFormat.hex, ALL_FAMILIES,
                            null_marker="NULL", with_texts=True))
    assert chunks[0].kinds.tolist() == [0, 2, 0] and chunks[0].texts == ["00", None, "01"]


def test_error_names_source_and_line():
    data = b"00\n\nabcd\nzz\n"
    with pytest.raises(InputError, match=r"^keys.txt: line 4: 'zz' is not hex .*--key-format hex"):
        _scan_all(data, KeyFormat.hex, chunk_keys=1)
    with pytest.raises(InputError, match=r"^keys.txt: line 3: invalid UTF-8 at column 3: invalid start byte"):
        _scan_all(b"a\n\n\xc3\xa9\xff\n", KeyFormat.string)


def test_arguments():
    src = keys.literal_keys([(1, "00"), (2, ""), (3, "ff")])
    (chunk,) = scan_keys([src], KeyFormat.hex, ALL_FAMILIES, with_texts=True)
    assert chunk.kinds.tolist() == [0, 1, 0]
    with pytest.raises(InputError, match=r"^argument 2: '1.5' is not a long"):
        list(scan_keys([keys.literal_keys([(1, "1"), (2, "1.5")])], KeyFormat.long, ALL_FAMILIES))
    with pytest.raises(InputError, match=r"^argument 1: not valid UTF-8"):
        list(scan_keys([keys.literal_keys([(1, "\udcff")])], KeyFormat.string, ALL_FAMILIES))


@pytest.mark.parametrize("twin", ["c", "pure"])
def test_endless_line_is_refused_without_reading_it(tmp_path, monkeypatch, twin):
    if twin == "pure":
        monkeypatch.setattr(keys, "_speedups", None)
    else:
        assert keys._speedups is compiled("kgtool.partitioner._speedups")
    f = tmp_path / "endless.txt"
    with open(f, "wb") as fh:  # a sparse 1 GiB file: one line, no newline
        fh.write(b"first\n")
        fh.truncate(1 << 30)
    src = keys.open_lines(str(f))
    try:
        with pytest.raises(InputError, match=r"endless.txt: line 2: longer than 64 MiB"):
            list(scan_keys([src], KeyFormat.string, ALL_FAMILIES))
    finally:
        src.close()
