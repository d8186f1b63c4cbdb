"""Id lists: a line is the id exactly as written, only its terminator removed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgtool.coordinator.idlist import concat, id_list_from_strings, parse_id_lines
from kgtool.coordinator.partitioning import hashcodes_for_many, hashcodes_from_units, java_string_hashcode
from kgtool.errors import InputError


def ids_and_hashes(data: bytes):
    parsed = parse_id_lines(data, "ids.txt")
    hashes = hashcodes_from_units(parsed.units, parsed.starts, parsed.lengths).tolist()
    assert hashes == hashcodes_for_many(parsed.ids).tolist()
    return parsed.ids


def test_spaces_kept_terminators_removed_empty_lines_skipped():
    data = b"  lead\ntrail  \r\n\n\r\nmid dle\nlast-no-newline"
    assert ids_and_hashes(data) == ["  lead", "trail  ", "mid dle", "last-no-newline"]


def test_nul_tab_and_unicode_are_part_of_the_id():
    data = "a\x00b\n\tx\n😀👍🏽\n注文\n".encode()
    assert ids_and_hashes(data) == ["a\x00b", "\tx", "😀👍🏽", "注文"]


def test_lone_carriage_return_inside_a_line_is_kept():
    assert ids_and_hashes(b"a\rb\nc\r\r\n") == ["a\rb", "c\r"]


def test_bom_is_kept_with_a_warning():
    parsed = parse_id_lines("\ufeffgroup\n".encode(), "ids.txt")
    assert parsed.ids == ["\ufeffgroup"]
    assert any("byte-order mark" in w for w in parsed.warnings)


def test_invalid_utf8_names_the_line():
    with pytest.raises(InputError, match=r"ids.txt: line 3: invalid UTF-8 at byte 9 \(column 2\)"):
        parse_id_lines(b"ok\nfine\nx\xff\n", "ids.txt")


def test_encoded_surrogate_is_invalid_utf8():
    with pytest.raises(InputError, match="line 1"):
        parse_id_lines(b"\xed\xa0\x80\n", "ids.txt")


def test_empty_input():
    assert parse_id_lines(b"", "ids.txt").ids == []
    assert parse_id_lines(b"\n\n\r\n", "ids.txt").ids == []


def test_concat_keeps_order_and_layout():
    a = parse_id_lines(b"x\ny\n", "a")
    b = id_list_from_strings(["", "z"])
    joined = concat([a, b])
    assert joined.ids == ["x", "y", "", "z"]
    hashes = hashcodes_from_units(joined.units, joined.starts, joined.lengths).tolist()
    assert hashes == hashcodes_for_many(["x", "y", "", "z"]).tolist()


line_text = st.text(
    alphabet=st.characters(codec="utf-8", blacklist_characters="\n"), min_size=0, max_size=20
)


@settings(max_examples=200, deadline=None)
@given(st.lists(line_text, max_size=20), st.sampled_from(["\n", "\r\n"]), st.booleans())
def test_round_trip_any_lines(lines, terminator, final_newline):
    # A line ending in "\r" followed by "\n" is indistinguishable from a CRLF terminator.
    lines = [ln for ln in lines if not ln.endswith("\r")]
    text = terminator.join(lines) + (terminator if final_newline else "")
    assert ids_and_hashes(text.encode()) == [ln for ln in lines if ln]


def test_ascii_ids_use_their_bytes_as_code_units():
    # No UTF-16 copy for ASCII text (it doubled the memory of a large id list); same hashes.
    data = b"orders\npayments\r\nx\n"
    parsed = parse_id_lines(data, "ids.txt")
    assert parsed.units.dtype == np.uint8
    assert hashcodes_from_units(parsed.units, parsed.starts, parsed.lengths).tolist() == [
        java_string_hashcode(s) for s in ("orders", "payments", "x")
    ]
    raw = b"a\nbc\n"
    plain = parse_id_lines(raw, "ids.txt")
    assert plain.units.base is raw  # a view of the input, not a copy
    mixed = concat([plain, parse_id_lines("é\n".encode(), "u")])
    assert mixed.units.dtype == np.uint16
    assert hashcodes_from_units(mixed.units, mixed.starts, mixed.lengths).tolist() == [
        java_string_hashcode(s) for s in ("a", "bc", "é")
    ]
