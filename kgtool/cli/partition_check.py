"""``kgtool partition-of --check DIR`` (rendering; the domain is kgtool.partitioner.check)."""

from kgtool.errors import UsageError


def run_check(directory, partitions, description, fmt) -> None:
    raise UsageError("--check is not implemented yet")
