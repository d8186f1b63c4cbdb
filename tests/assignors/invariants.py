"""The one helper every assignor test goes through (after franz-go's sticky/help_test.go)."""

from __future__ import annotations

from collections import Counter

from kgtool.assignors.model import Assignment, GroupSpec


def assert_valid(group: GroupSpec, assignment: Assignment) -> None:
    """Every subscribed partition assigned exactly once, only to a subscriber; every member listed."""
    assert set(assignment) == {m.member_id for m in group.members}, "members differ"
    subs = {m.member_id: set(m.topics) for m in group.members}
    counts = Counter(tp for parts in assignment.values() for tp in parts)
    dup = [tp for tp, c in counts.items() if c > 1]
    assert not dup, f"assigned more than once: {dup[:10]}"
    for member, parts in assignment.items():
        for topic, partition in parts:
            assert topic in subs[member], f"{member} got {topic}-{partition} without subscribing"
            assert 0 <= partition < group.topics[topic].partitions, f"{topic}-{partition} does not exist"
    subscribed = {t for s in subs.values() for t in s if t in group.topics}
    expected = {(t, p) for t in subscribed for p in range(group.topics[t].partitions)}
    missing = expected - set(counts)
    assert not missing, f"unassigned: {sorted(missing)[:10]}"


def assert_valid_and_balanced(group: GroupSpec, assignment: Assignment, *, balanced: bool = True) -> None:
    """:func:`assert_valid`, plus (when all subscriptions are identical) sizes within one."""
    assert_valid(group, assignment)
    if balanced and len({frozenset(m.topics) for m in group.members}) <= 1:
        sizes = [len(p) for p in assignment.values()]
        if sizes:
            assert max(sizes) - min(sizes) <= 1, f"unbalanced: sizes {sorted(sizes)}"
