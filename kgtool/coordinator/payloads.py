"""Which payload decoder reads the records of a topic: ``kafka-dump-log.sh``'s
``--offsets-decoder`` (``OffsetsMessageParser``), ``--transaction-log-decoder``
(``TransactionLogMessageParser``) and ``--share-group-state-decoder``
(``ShareGroupStateMessageParser``) for the internal topics, or the key and value shown as text.

``auto`` picks by the partition directory holding a segment, as the broker names it
(``LocalLog``): ``__consumer_offsets-N`` (``GroupMetadataManager``'s topic), ``__transaction_state-N``
(``TransactionStateManager``'s), ``__share_group_state-N`` (the share coordinator's, KIP-932),
anything else none. A ``-delete``/``-future``/``-stray`` copy is
not the topic's live log and gets no decoder.
"""

from __future__ import annotations

import base64
import enum
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kgtool.coordinator.partitioning import (
    CONSUMER_OFFSETS_TOPIC,
    SHARE_GROUP_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
)
from kgtool.errors import UsageError
from kgtool.storage.files import live_partition_of_dir

#: A payload decoder: (key bytes, value bytes) -> a decoded payload with ``to_json()``.
PayloadDecoder = Callable[[Any, Any], Any]


class DecodeMode(str, enum.Enum):
    """The payload decoders (``--decode``)."""

    auto = "auto"
    offsets = "offsets"
    txn = "txn"
    share_state = "share-state"
    utf8 = "utf8"
    hex = "hex"
    base64 = "base64"
    none = "none"


@dataclass
class TextPayload:
    """Key and value shown as text (utf8, hex or base64)."""

    kind: str
    tombstone: bool
    warnings: list
    key: Any
    value: Any

    def to_json(self) -> dict:
        return {"kind": self.kind, "key": self.key, "value": self.value, "warnings": self.warnings}


def text_decoder(mode: DecodeMode) -> PayloadDecoder:
    """The decoder showing key and value as ``mode`` (utf8: invalid sequences become U+FFFD,
    with a warning naming the first bad byte; hex; base64)."""
    def dec(key, value):
        warnings = []

        def one(name, b):
            if b is None:
                return None
            if mode is DecodeMode.utf8:
                try:
                    return bytes(b).decode("utf-8")
                except UnicodeDecodeError as exc:
                    warnings.append(f"{name} is not valid UTF-8 (byte {exc.start}); shown with U+FFFD")
                    return bytes(b).decode("utf-8", "replace")
            if mode is DecodeMode.hex:
                return bytes(b).hex()
            return base64.b64encode(bytes(b)).decode("ascii")

        return TextPayload(mode.value, value is None, warnings, one("key", key), one("value", value))

    return dec


def payload_decoder(mode: DecodeMode) -> tuple[PayloadDecoder | None, tuple[str, str] | None]:
    """The payload decoder of a mode, and the OffsetCommit kinds for the C fast path."""
    if mode is DecodeMode.none:
        return None, None
    if mode in (DecodeMode.offsets, DecodeMode.txn, DecodeMode.share_state):
        try:
            from kgtool.coordinator.records import (
                decode_offsets_record,
                decode_share_state_record,
                decode_transaction_record,
            )
        except ImportError:  # pragma: no cover - the coordinator package ships with kgtool
            raise UsageError(f"--decode {mode.value} is not available in this build") from None
        if mode is DecodeMode.offsets:
            return decode_offsets_record, ("legacy_offset_commit", "offset_commit")
        if mode is DecodeMode.share_state:
            return decode_share_state_record, None
        return decode_transaction_record, None
    return text_decoder(mode), None


def auto_mode(path: str) -> DecodeMode:
    """The decoder ``auto`` picks for a segment file, by the directory holding it."""
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    if live_partition_of_dir(parent, CONSUMER_OFFSETS_TOPIC) is not None:
        return DecodeMode.offsets
    if live_partition_of_dir(parent, TRANSACTION_STATE_TOPIC) is not None:
        return DecodeMode.txn
    if live_partition_of_dir(parent, SHARE_GROUP_STATE_TOPIC) is not None:
        return DecodeMode.share_state
    return DecodeMode.none


class PayloadDecoders:
    """The decoders of one run: ``mode`` for every input, or with ``auto`` each input's own
    (built once each)."""

    def __init__(self, mode: DecodeMode) -> None:
        self.mode = mode
        self._cache: dict[DecodeMode, tuple] = {}

    def of(self, input_mode: DecodeMode) -> tuple[PayloadDecoder | None, tuple[str, str] | None]:
        """The decoder (and fast-path kinds) for an input whose ``auto`` mode is ``input_mode``."""
        mode = self.mode if self.mode is not DecodeMode.auto else input_mode
        if mode not in self._cache:
            self._cache[mode] = payload_decoder(mode)
        return self._cache[mode]
