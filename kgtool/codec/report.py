"""What a decoding run reports about damage, and its verdict (the exit decision).

Shared by ``decode-batch`` and ``partition-of --check``. Problems are counted in a
:class:`~kgtool.codec.summary.ScanSummary`; their lines go to a caller-supplied ``warn``
function (the CLI prints them), the first :data:`MAX_PROBLEM_LINES` of them, the rest only
counted. :meth:`ProblemReporter.finish` decides: damage (anything but a truncated tail or zero
padding, both of which Kafka's ``FileRecords`` readers meet at the end of an active segment)
raises :class:`~kgtool.errors.FindingsReported` (exit 1), a truncated tail too with ``strict``;
inputs in which nothing decodes at all are no log segments: :class:`~kgtool.errors.InputError`
(exit 2) when no input decodes, else counted with the damage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from kgtool.codec.model import ScanProblem
from kgtool.codec.segment import describe_start, not_a_segment
from kgtool.codec.summary import TAIL_KINDS, ScanSummary
from kgtool.errors import FindingsReported, InputError

#: Problem lines shown before the rest are only counted.
MAX_PROBLEM_LINES = 100


class ProblemReporter:
    """Damage as decode-batch reports it: one ``warn`` line per problem (the first
    :data:`MAX_PROBLEM_LINES`, the rest counted), totals in a :class:`ScanSummary`, and
    :meth:`finish`'s verdict at the end."""

    def __init__(self, warn: Callable[[str], None], strict: bool = False) -> None:
        self.warn = warn
        self.strict = strict
        self.total = ScanSummary(source=None)
        self.problem_lines = 0
        #: "X: not a Kafka log segment ..." of each input in which nothing decoded.
        self.not_segments: list[str] = []

    def problem(self, p: ScanProblem) -> None:
        self.total.add_problem(p)
        self.show(p)

    def show(self, p: ScanProblem) -> None:
        self.line(p.message if p.kind not in TAIL_KINDS else f"{p.message} ({p.kind} tail)")

    def end_input(self, name: str, data: Any, start: int, end: Optional[int], batches: int,
                  problems: list[ScanProblem]) -> bool:
        """One input is done; ``problems``: its problems, not shown yet. An input in which
        nothing decodes is said to be no log segment (one line, instead of its byte-level
        damage; returns False); otherwise its problems are shown (returns True)."""
        if not_a_segment(batches, problems):
            stop = len(data) if end is None else min(end, len(data))
            message = (f"{name}: not a Kafka log segment: nothing in its {stop - start:,} bytes parses as "
                       f"a record batch (it starts with {describe_start(data, start)})")
            self.not_segments.append(message)  # shown by finish(), or raised by refuse_if_nothing_decoded()
            return False
        for p in problems:
            self.show(p)
        return True

    def payload_problem(self, msg: str) -> None:
        self.line(msg)

    def line(self, msg: str) -> None:
        """One problem line (counted; shown while under :data:`MAX_PROBLEM_LINES`)."""
        self.problem_lines += 1
        if self.problem_lines <= MAX_PROBLEM_LINES:
            self.warn(msg)
        elif self.problem_lines == MAX_PROBLEM_LINES + 1:
            self.warn(f"more than {MAX_PROBLEM_LINES} problems: the rest are only counted (see --summary)")

    def refuse_if_nothing_decoded(self) -> None:
        """No byte of any input decodes, and one is no log segment: the input is wrong, not
        damaged (exit 2, before any output).

        Raises:
            InputError: naming the first such input.
        """
        if self.not_segments and not self.total.batches:
            more = len(self.not_segments) - 1
            raise InputError(self.not_segments[0] + (f" (and {more} more inputs like it)" if more else ""))

    def finish(self) -> None:
        """The verdict: returns when the run is clean (exit 0).

        Raises:
            InputError: no input is a log segment. FindingsReported: damage, or with ``strict``
            a truncated tail.
        """
        t = self.total
        damage = t.damage()
        tail = any(k in TAIL_KINDS for k in t.problem_counts)
        self.refuse_if_nothing_decoded()
        for message in self.not_segments:
            self.line(message)
        if damage or (tail and self.strict):
            counts = ", ".join(f"{v} {k}" for k, v in sorted(t.problem_counts.items()))
            if t.payload_errors:
                counts = (counts + ", " if counts else "") + f"{t.payload_errors} payload errors"
            if self.not_segments:
                n = len(self.not_segments)
                counts += f"; {n} input{'s are' if n > 1 else ' is'} not a log segment"
            raise FindingsReported(f"problems reported: {counts}")
