"""Consumer lag through time, offline: from the ``__consumer_offsets`` replay and the data
partitions' own files, what ``kafka-consumer-groups.sh --describe`` and Burrow would have said
about each (group, topic, partition) at any instant.

- :mod:`kgtool.lag.collector`: what an offsets-log task collects for the lag phase while its replay
  runs (the offsets that took effect and when, the owners over time), and the files they travel
  in between the two phases;
- :mod:`kgtool.lag.list_offsets`: ListOffsets by timestamp (``end(T)``) read from a data
  partition's segments and indexes, as the broker answers it;
- :mod:`kgtool.lag.timeline`: the lag rows at each commit and step, the episodes, the rules;
- :mod:`kgtool.lag.burrow`: Burrow's verdict on a partition's window of commits;
- :mod:`kgtool.lag.phase`: the lag phase's Spark task (a few data partitions each) and the
  driver's combination of their results;
- ``kgtool.lag._kernel`` (``_kernel.c``, ``_lag.h``): the C loops of ``timeline`` and ``collector``,
  each with a NumPy or Python twin the tests hold equal.
"""
