"""The Spark side of ``spark-audit``: schemas, split planning, executor-side decoding and the
distributed replay. ``pyspark`` is imported lazily, inside functions, so that importing kgtool
(or ``kgtool --help``) never starts a JVM.

- :mod:`kgtool.spark.schemas`: the table vocabulary of :mod:`kgtool.offsets.tables` as Spark
  schemas (the Arrow ones are the offsets tables' own).
- :mod:`kgtool.spark.files`: input resolution (local, or any Hadoop filesystem through the
  JVM) and byte-range reading in executors.
- :mod:`kgtool.spark.plan`: split planning at batch boundaries.
- :mod:`kgtool.spark.job`: the DataFrame transforms and the job entry point (also runnable
  with ``spark-submit``).
- :mod:`kgtool.spark.session`: Java check and SparkSession construction.
"""
