"""The audit's options, shared by the in-process audit and the Spark job."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # offsets.retention.minutes default (10080)


@dataclass(frozen=True)
class AuditOptions:
    """``--group``, ``--since``, ``--until`` and ``--retention``."""

    group_pattern: str | None = None  # Python regex, re.search on the group id
    since: int | None = None  # epoch ms, inclusive: hide rows before it
    until: int | None = None  # epoch ms: read each partition up to its first record stamped at or after it
    retention_ms: int = DEFAULT_RETENTION_MS

    def group_matches(self, group: str | None) -> bool:
        if group is None or self.group_pattern is None:
            return True
        return re.search(self.group_pattern, group) is not None
