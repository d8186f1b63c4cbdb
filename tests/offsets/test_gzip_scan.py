"""The audit's scan inflates a gzip batch itself (kgtool/codec/_speedups.c, gunzip_one_member)
when its payload is one complete gzip member of at most 1 MiB; anything else goes to the
decompress callback. Both give the entries of the general decoder, whichever way a batch goes:
one member, two members (GZIPInputStream reads on), bytes after the member, a corrupt trailer,
a payload past the fast path's size."""

from __future__ import annotations

import gzip
import struct
import zlib

import crc32c
import pytest

from kgtool.offsets.entries import PROBLEM
from kgtool.offsets.scenario import Script
from kgtool.offsets.writer import write_segment
from tests.offsets.test_columns import check


def gzip_batch(tmp_path, partitions: int) -> bytes:
    """One gzip batch of offset commits (a segment holding only it)."""
    s = Script()
    s.commit("g", {("t", p): 1000 + p for p in range(partitions)}, compression="gzip")
    return open(write_segment(s, str(tmp_path / "__consumer_offsets-0")), "rb").read()


def with_payload(batch: bytes, payload: bytes) -> bytes:
    """The batch with another records section: its length and CRC-32C made right again."""
    body = batch[:61] + payload
    body = body[:8] + struct.pack(">i", len(body) - 12) + body[12:]
    return body[:17] + struct.pack(">I", crc32c.crc32c(body[21:])) + body[21:]


def raw_records(batch: bytes) -> bytes:
    return gzip.decompress(batch[61:])


@pytest.mark.parametrize("variant", ["one-member", "two-members", "bytes-after", "corrupt-trailer", "past-1MiB"])
def test_every_gzip_shape_decodes_as_the_general_path(tmp_path, variant):
    batch = gzip_batch(tmp_path, 40 if variant != "past-1MiB" else 40_000)
    raw = raw_records(batch)
    if variant == "two-members":
        batch = with_payload(batch, gzip.compress(raw[:100]) + gzip.compress(raw[100:]))
    elif variant == "bytes-after":
        batch = with_payload(batch, batch[61:] + b"\x00")
    elif variant == "corrupt-trailer":
        payload = bytearray(batch[61:])
        payload[-8] ^= 0xFF  # the member's CRC-32
        batch = with_payload(batch, bytes(payload))
    elif variant == "past-1MiB":
        assert len(raw) > 1 << 20
    entries = check(batch)
    problems = [e for e in entries if e.kind == PROBLEM]
    if variant == "corrupt-trailer":
        assert len(problems) == 1 and zlib.crc32(raw) != 0
    else:
        assert not problems
        assert sum(e.kind == "offset_commit" for e in entries) == (40 if variant != "past-1MiB" else 40_000)
