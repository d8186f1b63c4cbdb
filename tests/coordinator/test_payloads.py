"""The choice of payload decoder (kgtool.coordinator.payloads): by the live partition directory
with auto, else the mode given."""

from __future__ import annotations

import pytest

from kgtool.coordinator.payloads import DecodeMode, PayloadDecoders, auto_mode, payload_decoder
from kgtool.coordinator.records import decode_offsets_record, decode_transaction_record


@pytest.mark.parametrize("path, mode", [
    ("/d/__consumer_offsets-7/00000000000000000000.log", DecodeMode.offsets),
    ("/d/__transaction_state-0/00000000000000000000.log", DecodeMode.txn),
    ("/d/__consumer_offsets-7.0f1e2d3c4b5a69788796a5b4c3d2e1f0-delete/00000000000000000000.log", DecodeMode.none),
    ("/d/orders-3/00000000000000000000.log", DecodeMode.none),
    ("seg.log", DecodeMode.none),
])
def test_auto_mode_by_the_live_partition_directory(path, mode):
    assert auto_mode(path) is mode


def test_the_run_mode_wins_over_auto_and_decoders_are_built_once():
    auto = PayloadDecoders(DecodeMode.auto)
    assert auto.of(DecodeMode.offsets) == (decode_offsets_record, ("legacy_offset_commit", "offset_commit"))
    assert auto.of(DecodeMode.txn) == (decode_transaction_record, None)
    assert auto.of(DecodeMode.none) == (None, None)
    forced = PayloadDecoders(DecodeMode.hex)
    first = forced.of(DecodeMode.offsets)
    assert forced.of(DecodeMode.none) is first
    assert first[0](b"\x01", None).to_json() == {"kind": "hex", "key": "01", "value": None, "warnings": []}


def test_utf8_shows_invalid_bytes_with_a_warning():
    dec, fast = payload_decoder(DecodeMode.utf8)
    assert fast is None
    p = dec(b"ok", b"a\xffb")
    assert (p.key, p.value, p.tombstone) == ("ok", "a\ufffdb", False)
    assert p.warnings == ["value is not valid UTF-8 (byte 1); shown with U+FFFD"]
    assert payload_decoder(DecodeMode.base64)[0](None, b"hi").to_json()["value"] == "aGk="
