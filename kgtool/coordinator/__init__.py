"""Kafka's group-coordinator knowledge: which partition serves a key, and (with the codec)
the record schemas of ``__consumer_offsets`` and ``__transaction_state``."""
