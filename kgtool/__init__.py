"""kgtool: offline analysis of Apache Kafka consumer groups.

Dependencies point one way: ``cli -> {spark -> offsets, assignors, partitioner} -> coordinator ->
codec``, with ``java`` (Java semantics), ``native`` (C or Python) and ``errors`` below them all.
Nothing outside :mod:`kgtool.cli` imports the CLI, and nothing at import time starts a JVM.
"""

__version__ = "0.1.0"
