"""``--reset-plan``: the CSV that ``kafka-consumer-groups.sh --reset-offsets --from-file`` reads
(kafka-tools ``GroupOffsetsResetter.parseResetPlan``: the file split on newlines, each line one
``group,topic,partition,offset`` CSV record), written atomically."""

from __future__ import annotations

import csv
import os

import pytest

from kgtool.errors import InputError, UsageError
from kgtool.offsets.reset_plan import check_plan_path, plan_text, write_plan


def parse_like_kafka(text: str) -> list[tuple[str, str, int, int]]:
    """What parseResetPlan reads: ``text.split("\\n")`` (Java drops trailing empty strings),
    then each line as one CSV record of four fields (RFC 4180 quotes)."""
    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    out = []
    for line in lines:
        (fields,) = list(csv.reader([line]))
        assert len(fields) == 4, line  # 3 would be the single-group form; a header would not parse
        group, topic, partition, offset = fields
        out.append((group, topic, int(partition), int(offset)))
    return out


def test_one_line_per_partition_sorted_no_header():
    rows = [["g2", "t", 1, 5, False], ["g1", "u", 0, 7, True], ["g1", "t", 10, 3, False], ["g1", "t", 2, 9, False]]
    text = plan_text(rows)
    assert text == "g1,t,2,9\ng1,t,10,3\ng1,u,0,7\ng2,t,1,5\n"
    assert parse_like_kafka(text) == [("g1", "t", 2, 9), ("g1", "t", 10, 3), ("g1", "u", 0, 7), ("g2", "t", 1, 5)]


def test_group_ids_that_need_quotes_round_trip():
    groups = ['a,b', 'say "hi"', " padded ", "é-ü", ""]
    text = plan_text([[g, "t", 0, 42] for g in groups])
    assert sorted(r[0] for r in parse_like_kafka(text)) == sorted(groups)


def test_line_break_in_a_group_id_is_refused():
    with pytest.raises(InputError, match="line break"):
        plan_text([["bad\ngroup", "t", 0, 1]])


def test_write_is_atomic_and_replaces(tmp_path):
    path = tmp_path / "plan.csv"
    path.write_text("old\n")
    write_plan(str(path), "g,t,0,1\n")
    assert path.read_text() == "g,t,0,1\n"
    assert os.listdir(tmp_path) == ["plan.csv"]


def test_failed_write_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "plan.csv"
    path.write_text("old\n")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(InputError, match="No space left on device"):
        write_plan(str(path), "g,t,0,1\n")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["plan.csv"]  # no temporary file left


def test_check_plan_path(tmp_path):
    check_plan_path("-")
    check_plan_path(str(tmp_path / "plan.csv"))
    assert os.listdir(tmp_path) == []  # the probe leaves nothing behind
    with pytest.raises(UsageError, match="is a directory"):
        check_plan_path(str(tmp_path))
    with pytest.raises(UsageError, match="does not exist"):
        check_plan_path(str(tmp_path / "missing" / "plan.csv"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="does not exist"):
        check_plan_path(str(tmp_path / "file" / "plan.csv"))
