"""``--reset-plan FILE``: committed offsets as the CSV that ``kafka-consumer-groups.sh
--reset-offsets --from-file FILE`` reads.

The format is kafka-tools' ``GroupOffsetsResetter.parseResetPlan`` (Kafka 4.x; ``CsvUtils``)::

    group,topic,partition,offset        one line per partition (CsvRecordWithGroup), no header

The tool splits the file on ``\\n`` and parses each line as one CSV record (Jackson: RFC 4180
quotes, no trimming, UTF-8), so every line must be a record: a header line would fail as a
record, and a field holding a line break cannot be written at all. It takes the old
``topic,partition,offset`` form only with a single ``--group``; the group column is always
written here, which it reads with any ``--group``/``--all-groups``. Only the offset is restored
(``new OffsetAndMetadata(offset)``: no metadata, no leader epoch), and ``--execute`` clamps it
into the topic partition's current log range.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from kgtool.errors import InputError
from kgtool.outfile import check_writable, write_atomic

STDOUT = "-"
OPTION = "--reset-plan"


def plan_text(rows: Iterable[Any]) -> str:
    """The plan of ``rows`` — (group, topic, partition, offset, ...) — sorted by group, topic and
    partition, one ``group,topic,partition,offset`` line each, quoted where CSV needs it.

    Raises:
        InputError: a group or topic holds a line break (the tool reads the file line by line).
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    for group, topic, partition, offset, *_rest in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        for name in (group, topic):
            if "\n" in name or "\r" in name:
                raise InputError(f"--reset-plan: {name!r} holds a line break, which kafka-consumer-groups.sh "
                                 "--from-file cannot read (it splits the file into lines): leave that group out "
                                 "with --group; nothing written")
        w.writerow((group, topic, int(partition), int(offset)))
    return buf.getvalue()


def check_plan_path(path: str) -> None:
    """Before the audit runs: ``path`` can be written (``-``: stdout); see
    :func:`kgtool.outfile.check_writable`.

    Raises:
        UsageError: the path is a directory, its directory is missing, or nothing can be
            written there.
    """
    if path == STDOUT:
        return
    check_writable(path, OPTION)


def write_plan(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`kgtool.outfile.write_atomic`); on any
    failure ``path`` is left as it was.

    Raises:
        InputError: the file cannot be written.
    """
    write_atomic(path, text.encode("utf-8"), OPTION)
