"""``kgtool.assignors.analysis``: statistics, what-if, comparison, validation, replay."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings

from kgtool.assignors import analysis, registry
from kgtool.assignors.group_input import RecordedRound
from kgtool.assignors.model import GroupSpec, MemberSpec, TopicSpec
from kgtool.errors import InputError, UsageError
from tests.assignors._build import group
from tests.assignors._strategies import groups
from tests.assignors.invariants import assert_valid, assert_valid_and_balanced


@pytest.fixture
def toy_cooperative(monkeypatch):
    """Put the test-only ToyCooperative in the cooperative-sticky slot (bookkeeping tests)."""
    monkeypatch.setitem(registry._IMPLEMENTATIONS, "cooperative-sticky", ("tests.assignors._toy", "ToyCooperative"))


def test_stats_of_a_first_assignment():
    g = group({"t0": 3, "t1": 3}, {"C0": ["t0", "t1"], "C1": ["t0", "t1"], "C2": ["t0"]})
    a = {"C0": [("t0", 0), ("t1", 0), ("t1", 1)], "C1": [("t0", 1), ("t0", 2), ("t1", 2)], "C2": []}
    s = analysis.compute_stats(g, a, protocol="eager")
    assert (s.members, s.assigned, s.withheld, s.min, s.max) == (3, 6, 0, 0, 3)
    assert s.mean == 2.0 and math.isclose(s.stddev, math.sqrt(2.0))
    assert s.idle_members == ["C2"]
    assert (s.moved, s.kept, s.newly_assigned, s.revoked) == (0, 0, 6, 0)


def test_moved_and_revoked_eager_versus_cooperative():
    owned = {"C0": [("t0", 0), ("t0", 1)], "C1": [("t0", 2), ("t0", 3)]}
    g = group({"t0": 4}, {"C0": ["t0"], "C1": ["t0"], "C2": ["t0"]}, owned=owned, generation={"C0": 3, "C1": 3})
    a = {"C0": [("t0", 0)], "C1": [("t0", 2), ("t0", 3)], "C2": [("t0", 1)]}
    eager = analysis.compute_stats(g, a, protocol="eager")
    coop = analysis.compute_stats(g, a, protocol="cooperative")
    assert (eager.moved, eager.kept, eager.newly_assigned) == (1, 3, 0)
    # Eager: every member revokes everything it owns before rejoining (stop-the-world).
    assert eager.revoked == 4 and eager.revoked_by_member == {"C0": 2, "C1": 2}
    # Cooperative: only what leaves a member.
    assert coop.revoked == 1 and coop.revoked_by_member == {"C0": 1}


def test_stale_generation_claim_loses():
    g = group({"t0": 2}, {"A": ["t0"], "B": ["t0"]},
              owned={"A": [("t0", 0)], "B": [("t0", 0), ("t0", 1)]}, generation={"A": 4, "B": 5})
    assert analysis.previous_owners(g) == {("t0", 0): "B", ("t0", 1): "B"}


def test_withheld_counts_unassigned_subscribed_partitions():
    g = group({"t0": 4, "unsubscribed": 9}, {"C0": ["t0"], "C1": ["t0"]})
    s = analysis.compute_stats(g, {"C0": [("t0", 0)], "C1": [("t0", 1)]}, protocol="cooperative")
    assert s.withheld == 2


def test_what_if_remove_add_partitions():
    g = group({"a": 4}, {"C0": ["a"], "C1": ["a"]}, owned={"C0": [("a", 0), ("a", 1)], "C1": [("a", 2), ("a", 3)]})
    w = analysis.WhatIf(remove=["C1"], add=[("C2", ("a", "b"))], partitions={"b": 2, "a": 6})
    out = analysis.apply_what_if(g, w)
    assert out.topics == {"a": TopicSpec("a", 6), "b": TopicSpec("b", 2)}
    assert [m.member_id for m in out.members] == ["C0", "C2"]
    assert out.members[1] == MemberSpec("C2", ("a", "b"))
    assert out.members[0].owned == (("a", 0), ("a", 1))
    assert w.describe() == ["remove C1", "add C2 subscribed to a,b", "b has 2 partitions", "a has 6 partitions"]


@pytest.mark.parametrize(
    ("what_if", "message"),
    [
        (analysis.WhatIf(remove=["X"]), "--remove X: no such member (members: C0, C1)"),
        (analysis.WhatIf(add=[("C0", ("a",))]), "--add C0: the group already has a member 'C0'"),
        (analysis.WhatIf(add=[("C9", ("zz",))]), "--add C9: unknown topic 'zz' (give its size with --partitions zz=N)"),
        (analysis.WhatIf(partitions={"a": 2}), "--partitions a=2: a has 4 partitions and Kafka cannot remove partitions"),
    ],
)
def test_bad_what_if(what_if, message):
    g = group({"a": 4}, {"C0": ["a"], "C1": ["a"]})
    with pytest.raises(UsageError) as exc:
        analysis.apply_what_if(g, what_if)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("text", "parsed"), [("m=a,b", ("m", ("a", "b"))), (" m = a , ", ("m", ("a",)))]
)
def test_parse_add(text, parsed):
    assert analysis.parse_add(text) == parsed


@pytest.mark.parametrize("text", ["m", "=a", "m=", "m=,"])
def test_parse_add_errors(text):
    with pytest.raises(UsageError, match="--add expects MEMBER=topic"):
        analysis.parse_add(text)


def test_parse_partitions():
    assert analysis.parse_partitions("my=topic=12") == ("my=topic", 12)
    for bad in ("t", "t=x", "t=-1", "=3"):
        with pytest.raises(UsageError, match="--partitions expects TOPIC=N"):
            analysis.parse_partitions(bad)


def test_what_if_starts_from_the_assignors_own_baseline():
    # No member owns anything: the current assignment is what range gives the unchanged group.
    g = group({"t0": 3, "t1": 3}, {"C0": ["t0", "t1"], "C1": ["t0", "t1"]})
    r = analysis.analyse("range", g, analysis.WhatIf(add=[("C2", ("t0", "t1"))]))
    assert r.baseline == {"C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)], "C1": [("t0", 2), ("t1", 2)]}
    assert r.assignment == {"C0": [("t0", 0), ("t1", 0)], "C1": [("t0", 1), ("t1", 1)], "C2": [("t0", 2), ("t1", 2)]}
    # C0 kept t0-0 and t1-0; t0-1, t1-1 moved to C1; t0-2, t1-2 to C2.
    assert (r.stats.moved, r.stats.kept, r.stats.newly_assigned) == (4, 2, 0)
    assert r.stats.revoked == 6  # eager: everything owned
    assert_valid_and_balanced(r.group, r.assignment)


def test_remove_frees_the_partitions_of_the_leaver():
    g = group({"t0": 4}, {"C0": ["t0"], "C1": ["t0"]},
              owned={"C0": [("t0", 0), ("t0", 1)], "C1": [("t0", 2), ("t0", 3)]}, generation={"C0": 1, "C1": 1})
    r = analysis.analyse("roundrobin", g, analysis.WhatIf(remove=["C1"]))
    assert r.assignment == {"C0": [("t0", 0), ("t0", 1), ("t0", 2), ("t0", 3)]}
    # The leaver's partitions moved; nobody present revokes anything but eager C0 its own.
    assert (r.stats.moved, r.stats.kept) == (2, 2)
    assert r.stats.revoked_by_member == {"C0": 2}


def test_cooperative_settles_in_a_follow_up_rebalance(toy_cooperative):
    g = group({"t0": 4}, {"C0": ["t0"], "C1": ["t0"]},
              owned={"C0": [("t0", 0), ("t0", 1), ("t0", 2), ("t0", 3)]}, generation={"C0": 2})
    r = analysis.analyse("cooperative-sticky", g)
    assert r.rebalance_protocol == "cooperative"
    assert r.stats.withheld == 2 and r.stats.revoked == 2
    assert r.rebalances == 2 and r.settled is not None
    assert_valid(g, r.settled)
    assert r.settled_stats is not None and r.settled_stats.moved == 2 and r.settled_stats.kept == 2


def test_compare_eager_revokes_everything(toy_cooperative):
    g = group({"t0": 6}, {"C0": ["t0"], "C1": ["t0"]},
              owned={"C0": [("t0", p) for p in range(3)], "C1": [("t0", p) for p in range(3, 6)]},
              generation={"C0": 1, "C1": 1})
    rows = analysis.compare(["range", "roundrobin", "cooperative-sticky"], g, analysis.WhatIf(add=[("C2", ("t0",))]))
    by = {r.assignor: r for r in rows}
    assert [r.assignor for r in rows] == ["range", "roundrobin", "cooperative-sticky"]
    assert by["range"].revoked == 6 and by["roundrobin"].revoked == 6
    assert by["cooperative-sticky"].revoked == 2 and by["cooperative-sticky"].rebalances == 2
    assert by["cooperative-sticky"].moved == 2
    # range gives C0 0,1 / C1 2,3 / C2 4,5: C0 keeps 0,1, C1 keeps 3; 2, 4 and 5 move.
    assert by["range"].moved == 3 and by["range"].kept == 3
    assert {r.min for r in rows} == {2} and {r.max for r in rows} == {2}
    assert rows[0].to_json()["rebalance_protocol"] == "eager"


def test_validate_finds_every_kind_of_problem():
    g = group({"a": 3, "b": 1}, {"C0": ["a"], "C1": ["a", "b"]})
    a = {"C0": [("a", 0), ("a", 0), ("b", 0)], "C1": [("a", 0), ("a", 7), ("zz", 1)], "X": []}
    report = analysis.validate(g, a)
    assert not report.valid
    assert report.problems == [
        "C0: a-0 listed twice",
        "C0: b-0: member is not subscribed to b",
        "a-0: assigned to both C0 and C1",
        "C1: a-7: no such partition (a has 3)",
        "C1: zz-1: unknown topic",
        "X: not a member of the group",
        "a: 2 subscribed partition(s) unassigned: 1, 2",
    ]


def test_validate_accepts_a_real_assignment():
    g = group({"t0": 3, "t1": 3}, {"C0": ["t0", "t1"], "C1": ["t0", "t1"]})
    report = analysis.validate(g, analysis.run("range", g))
    assert report.valid and report.checked_partitions == 6


@settings(max_examples=40, deadline=None)
@given(groups())
def test_validate_agrees_with_the_invariant_helper(g):
    a = analysis.run("roundrobin", g)
    assert analysis.validate(g, a).valid
    if a and any(a.values()):
        victim = next(m for m, p in a.items() if p)
        broken = dict(a)
        broken[victim] = a[victim][1:]
        assert not analysis.validate(g, broken).valid


def test_assignment_documents():
    doc_ours = {"assignment": {"C0": {"a": [1, 0]}, "C1": {}}}
    doc_golden = {"C0": [["a", 1], ["a", 0]], "C1": []}
    assert analysis.assignment_from_document(doc_ours, "x") == {"C0": [("a", 1), ("a", 0)], "C1": []}
    assert analysis.assignment_from_document(doc_golden, "x") == {"C0": [("a", 1), ("a", 0)], "C1": []}
    with pytest.raises(InputError, match="member 'C0': partitions of 'a' must be a list of integers"):
        analysis.assignment_from_document({"C0": {"a": ["x"]}}, "x")
    with pytest.raises(InputError, match=r"member 'C0': entry \['a'\] is not \[topic, partition\]"):
        analysis.assignment_from_document({"C0": [["a"]]}, "x")


def _round(g: GroupSpec, recorded, generation=3) -> RecordedRound:
    return RecordedRound(group_id="g", generation=generation, protocol="range", group=g, recorded=recorded, line=1)


def test_replay_matches_and_differs():
    g = group({"t0": 3, "t1": 3}, {"C0": ["t0", "t1"], "C1": ["t0", "t1"]})
    good = {"C0": [("t1", 0), ("t1", 1), ("t0", 0), ("t0", 1)], "C1": [("t0", 2), ("t1", 2)]}  # order not compared
    bad = {"C0": [("t0", 0), ("t1", 0), ("t1", 1)], "C1": [("t0", 1), ("t0", 2), ("t1", 2)]}
    r1, r2 = analysis.replay([_round(g, good), _round(g, bad, 4)])
    assert r1.matches and r1.assignor == "range"
    assert not r2.matches
    assert r2.differences == {
        "C0": ([("t0", 0), ("t1", 0), ("t1", 1)], [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)]),
        "C1": ([("t0", 1), ("t0", 2), ("t1", 2)], [("t0", 2), ("t1", 2)]),
    }
    (r3,) = analysis.replay([_round(g, good)], "roundrobin")
    assert r3.assignor == "roundrobin" and not r3.matches


def test_replay_needs_a_protocol():
    g = group({"t0": 1}, {"C0": ["t0"]})
    rnd = RecordedRound(group_id="g", generation=2, protocol=None, group=g, recorded={}, line=1)
    with pytest.raises(UsageError, match="generation 2 of 'g' has no protocol: give --assignor"):
        analysis.replay([rnd])


def test_sticky_javadoc_example_after_c1_leaves():
    # The StickyAssignor javadoc example: sticky with C0..C2 on t0..t3 (2 partitions each), then C1 leaves: every
    # surviving owner keeps its partitions; only C1's move.
    g = group({"t0": 2, "t1": 2, "t2": 2, "t3": 2}, {c: ["t0", "t1", "t2", "t3"] for c in ("C0", "C1", "C2")})
    first = analysis.run("sticky", g)
    assert first == {"C0": [("t0", 0), ("t1", 1), ("t3", 0)], "C1": [("t0", 1), ("t2", 0), ("t3", 1)],
                     "C2": [("t1", 0), ("t2", 1)]}
    r = analysis.analyse("sticky", g, analysis.WhatIf(remove=["C1"]))
    assert r.baseline == first
    for member in ("C0", "C2"):
        assert set(first[member]) <= set(r.assignment[member])
    assert (r.stats.moved, r.stats.kept) == (3, 5)
    assert r.stats.revoked == 5  # eager: C0 and C2 revoke all they own before rejoining
    rows = {row.assignor: row for row in analysis.compare(["sticky", "cooperative-sticky"], g, analysis.WhatIf(remove=["C1"]))}
    assert rows["sticky"].revoked == 5 and rows["cooperative-sticky"].revoked == 0
    assert rows["cooperative-sticky"].moved == 3 and rows["cooperative-sticky"].rebalances == 1


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative-sticky", "server-uniform", "server-range"])
@settings(max_examples=25, deadline=None)
@given(g=groups(max_members=8, max_topics=4, max_partitions=16))
def test_nothing_moves_when_nothing_changed(name, g):
    # Stickiness, through the analysis: a group rejoining with what it owns, same
    # members and subscriptions, gets the same partitions (moved 0, nothing withheld), and
    # only an eager protocol revokes anything.
    first = analysis.run(name, g)
    first, _ = analysis.settle(name, g, first)
    r = analysis.analyse(name, analysis.with_owned(g, first))
    assert r.stats.moved == 0 and r.stats.withheld == 0
    assert {m: sorted(p) for m, p in r.assignment.items()} == {m: sorted(p) for m, p in first.items()}
    owned = sum(len(p) for p in first.values())
    assert r.stats.kept == owned
    assert r.stats.revoked == (owned if registry.info(name).rebalance_protocol == "eager" else 0)


# -- validation under the cooperative protocol (KIP-429)


def _coop_group():
    return GroupSpec(
        topics={"orders": TopicSpec("orders", 6)},
        members=[
            MemberSpec("A", ("orders",), owned=(("orders", 0), ("orders", 1), ("orders", 2))),
            MemberSpec("B", ("orders",), owned=(("orders", 3), ("orders", 4), ("orders", 5))),
            MemberSpec("C", ("orders",)),
        ],
        assignor="cooperative-sticky",
    )


def test_validate_cooperative_sticky_own_first_round_is_valid_with_pending_revocation():
    g = _coop_group()
    a = analysis.run("cooperative-sticky", g)
    assert sum(map(len, a.values())) == 4  # two partitions withheld while A and B revoke them
    eager = analysis.validate(g, a)
    assert not eager.valid and eager.problems == ["orders: 2 subscribed partition(s) unassigned: 2, 5"]
    report = analysis.validate(g, a, protocol="cooperative")
    assert report.valid, report.problems
    assert report.pending_revocation == {"A": [("orders", 2)], "B": [("orders", 5)]}
    assert report.pending_count == 2


def test_validate_cooperative_refuses_a_partition_given_before_it_is_revoked():
    # ConsumerCoordinator.validateCooperativeAssignment: added and revoked must not overlap.
    g = _coop_group()
    a = {"A": [("orders", 0), ("orders", 1)], "B": [("orders", 3), ("orders", 4), ("orders", 2)], "C": [("orders", 5)]}
    report = analysis.validate(g, a, protocol="cooperative")
    assert report.problems == [
        "orders-2: assigned to B while A still owns it: under the cooperative protocol A revokes it first and a "
        "follow-up rebalance assigns it",
        "orders-5: assigned to C while B still owns it: under the cooperative protocol B revokes it first and a "
        "follow-up rebalance assigns it",
    ]
    assert analysis.validate(g, a).valid  # the same moves are fine under the eager protocol


def test_validate_cooperative_unowned_partition_must_still_be_assigned():
    g = _coop_group()
    a = {"A": [("orders", 0), ("orders", 1), ("orders", 2)], "B": [("orders", 3), ("orders", 4)], "C": []}
    members = [*g.members[:1], MemberSpec("B", ("orders",), owned=(("orders", 3), ("orders", 4))), g.members[2]]
    report = analysis.validate(GroupSpec(topics=g.topics, members=members), a, protocol="cooperative")
    assert report.problems == ["orders: 1 subscribed partition(s) unassigned: 5"] and not report.pending_revocation


@pytest.mark.parametrize("doc, assignor, expected", [
    ({"rebalance_protocol": "cooperative", "assignment": {}}, None, "cooperative"),
    ({"assignor": "cooperative-sticky", "assignment": {}}, "range", "cooperative"),
    ({"A": {"orders": [0]}}, "CooperativeStickyAssignor", "cooperative"),
    ({"A": {"orders": [0]}}, "sticky", "eager"),
    ({"A": {"orders": [0]}}, "server-uniform", "consumer"),
    ({"A": {"orders": [0]}}, None, "eager"),
])
def test_validation_protocol(doc, assignor, expected):
    assert analysis.validation_protocol(doc, assignor) == expected
