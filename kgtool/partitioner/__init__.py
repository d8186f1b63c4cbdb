"""Where a producer puts a keyed record: each client's default partitioner, key serializers, and
the evidence in a data topic's partition.

- :mod:`kgtool.partitioner.rules`: the partitioners of the Java client, librdkafka and Sarama
  (murmur2 from :mod:`kgtool.java`, CRC32, FNV-1a) and when their choice is not deterministic;
- :mod:`kgtool.partitioner.keys`: key formats (Kafka's serializers) and the line scanner, with a
  compiled twin (``kgtool.partitioner._speedups``);
- :mod:`kgtool.partitioner.lookup`: ``partition-of`` (one partitioner, a comparison, a
  partition-count change, a histogram);
- :mod:`kgtool.partitioner.check`: ``partition-of --check DIR``.
"""
