"""Records of ``__transaction_state``: TransactionLogKey / TransactionLogValue.

Transcribed from Apache Kafka 4.x
``transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json`` and
``TransactionLogValue.json``; framing as in ``TransactionLog.readTxnRecordKey/Value``:

.. code-block:: text

    key   = key_version:int16 (0) transactional_id:string
    value = value_version:int16 (0-1) producer_id:int64
            previous_producer_id:int64 (tag 0, v1+) next_producer_id:int64 (tag 1, v1+)
            producer_epoch:int16 transaction_timeout_ms:int32 transaction_status:int8
            transaction_partitions:[topic:string partition_ids:[]int32]? (nullable)
            transaction_last_update_timestamp_ms:int64 transaction_start_timestamp_ms:int64
            client_transaction_version:int16 (tag 2, v1+); flexible from v1
"""

from __future__ import annotations

from kgtool.coordinator.schema import F, MessageSchema

_DIR = "transaction-coordinator/src/main/resources/common/message/"

TRANSACTION_LOG_KEY = MessageSchema.of(
    "TransactionLogKey",
    api_key=0,
    versions="0",
    flexible="none",
    source=_DIR + "TransactionLogKey.json",
    fields=[F("transactional_id", "string", "0")],
)

TRANSACTION_LOG_VALUE = MessageSchema.of(
    "TransactionLogValue",
    api_key=0,
    versions="0-1",
    flexible="1+",
    source=_DIR + "TransactionLogValue.json",
    fields=[
        F("producer_id", "int64", "0+"),
        F("previous_producer_id", "int64", None, tag=0, tagged="1+", default=-1),
        F("next_producer_id", "int64", None, tag=1, tagged="1+", default=-1),
        F("producer_epoch", "int16", "0+"),
        F("transaction_timeout_ms", "int32", "0+"),
        F("transaction_status", "int8", "0+"),
        F(
            "transaction_partitions",
            "[]PartitionsSchema",
            "0+",
            nullable="0+",
            fields=[
                F("topic", "string", "0+"),
                F("partition_ids", "[]int32", "0+"),
            ],
        ),
        F("transaction_last_update_timestamp_ms", "int64", "0+"),
        F("transaction_start_timestamp_ms", "int64", "0+"),
        F("client_transaction_version", "int16", None, tag=2, tagged="1+", default=0),
    ],
)

#: ``TransactionState`` ids as stored in ``transaction_status`` (TransactionState.java).
TRANSACTION_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
