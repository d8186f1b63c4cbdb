"""The verdict of a decoding run (kgtool.codec.report): which problems make exit 1, when the
input is refused (exit 2), and the cap on problem lines."""

from __future__ import annotations

import re

import pytest

from kgtool.codec.model import ScanProblem
from kgtool.codec.report import MAX_PROBLEM_LINES, ProblemReporter
from kgtool.errors import FindingsReported, InputError


def problem(kind: str, position: int = 7) -> ScanProblem:
    return ScanProblem(kind=kind, position=position, length=3, reason="r", message=f"seg.log: byte {position}: r")


def reporter(strict: bool = False) -> tuple[ProblemReporter, list[str]]:
    lines: list[str] = []
    return ProblemReporter(lines.append, strict), lines


def test_a_clean_run_returns():
    r, lines = reporter()
    r.finish()
    assert lines == []


def test_a_truncated_tail_is_shown_and_an_error_only_when_strict():
    r, lines = reporter()
    r.problem(problem("truncated"))
    r.finish()
    assert lines == ["seg.log: byte 7: r (truncated tail)"]
    r, lines = reporter(strict=True)
    r.problem(problem("truncated"))
    with pytest.raises(FindingsReported, match="^problems reported: 1 truncated$"):
        r.finish()


def test_damage_and_payload_errors_are_exit_1_with_their_counts():
    r, lines = reporter()
    r.problem(problem("crc_mismatch"))
    r.problem(problem("crc_mismatch", 90))
    r.total.payload_errors += 1
    r.payload_problem("seg.log: batch@0 offset 3: payload: bad")
    with pytest.raises(FindingsReported, match="^problems reported: 2 crc_mismatch, 1 payload errors$"):
        r.finish()
    assert lines == ["seg.log: byte 7: r", "seg.log: byte 90: r", "seg.log: batch@0 offset 3: payload: bad"]


def test_no_input_a_segment_is_refused_and_one_among_others_is_counted():
    r, lines = reporter()
    data = b"group: g1\nmember: m\n" * 3
    corrupt = ScanProblem(kind="corrupt", position=0, length=len(data), reason="r", message="x")
    r.total.add_problem(corrupt)
    assert r.end_input("a.yaml", data, 0, None, 0, [corrupt]) is False
    expected = ("a.yaml: not a Kafka log segment: nothing in its 60 bytes parses as a record batch (it starts "
                "with 'group: g1\\nmember')")
    with pytest.raises(InputError, match="^" + re.escape(expected) + "$"):
        r.finish()
    r.total.batches = 1
    with pytest.raises(FindingsReported, match="^problems reported: 1 corrupt; 1 input is not a log segment$"):
        r.finish()
    assert lines == [r.not_segments[0]]


def test_problem_lines_stop_at_the_cap_and_the_rest_are_counted():
    r, lines = reporter()
    for i in range(MAX_PROBLEM_LINES + 5):
        r.problem(problem("malformed", i))
    assert len(lines) == MAX_PROBLEM_LINES + 1
    assert lines[-1].startswith(f"more than {MAX_PROBLEM_LINES} problems")
    assert r.total.problem_counts["malformed"] == MAX_PROBLEM_LINES + 5
