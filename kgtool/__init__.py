"""kgtool: offline analysis of Apache Kafka consumer groups.

Dependencies point one way: ``cli -> {spark, offsets, assignors} -> coordinator -> codec``.
Nothing outside :mod:`kgtool.cli` imports the CLI, and nothing at import time starts a JVM.
"""

__version__ = "0.1.0"
