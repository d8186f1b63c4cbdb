"""The partition replay (kgtool.offsets.partition: group state, offset store and rules over a
whole log partition at once) equals the frozen group-by-group oracle (tests/offsets/oracle_audit.py,
the semantics of kgtool 0.1) on every table, for random logs, random filters and every sample;
on the compiled commit loop and on its pure-Python twin."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kgtool.offsets import samples
from kgtool.offsets.audit import audit_entries
from kgtool.offsets.options import AuditOptions
from kgtool.offsets.scenario import Script
from kgtool.offsets.store import K, K_FIELDS
from kgtool.offsets.tables import TABLE_NAMES, member_dicts
from tests.offsets.chunks import ToyKeys, to_chunks
from tests.offsets.oracle_audit import ORACLE_TABLES, canonical, oracle_audit
from tests.offsets.test_properties import apply_offset_op
from tests.twins import have_compiled

GROUPS = ("g1", "g2", "h3")
TPS = (("t", 0), ("t", 1), ("u", 0))
MEMBERS = ("a-1", "b-1", "c-1")
PIDS = (7, 8)
START = 1_717_171_200_000

assignment = st.dictionaries(st.sampled_from(MEMBERS), st.lists(st.sampled_from(TPS), unique=True, max_size=3),
                             max_size=3)
op = st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 40),
              st.integers(-1, 4)),
    st.tuples(st.just("txn"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 40),
              st.sampled_from(PIDS)),
    st.tuples(st.just("marker"), st.sampled_from(PIDS), st.sampled_from(["COMMIT", "ABORT"])),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.sampled_from(TPS)),
    st.tuples(st.just("generation"), st.sampled_from(GROUPS), assignment, st.booleans()),
    st.tuples(st.just("delete_group"), st.sampled_from(GROUPS)),
    st.tuples(st.just("idle"), st.integers(0, 10 * 24)),
    # All partitions to one member, another member with none: moves, zombies, cooperative revocation.
    st.tuples(st.just("owner"), st.sampled_from(GROUPS), st.sampled_from(MEMBERS), st.sampled_from(MEMBERS)),
    # Metadata, OffsetCommitValue v1 with an expire timestamp (hours from now; -1: none), plain
    # or transactional: the offsets table's columns.
    st.tuples(st.just("meta"), st.sampled_from(GROUPS), st.sampled_from(TPS), st.integers(0, 40),
              st.sampled_from(["", "ckpt-7", "é,\"q\"", "x" * 40]), st.one_of(st.none(), st.integers(-1, 48)),
              st.one_of(st.none(), st.sampled_from(PIDS))),
)
options = st.builds(
    AuditOptions,
    group_pattern=st.sampled_from([None, "^g", "3$"]),
    since=st.one_of(st.none(), st.integers(START, START + 5 * 86_400_000)),
    until=st.one_of(st.none(), st.integers(START, START + 10 * 86_400_000)),
    retention_ms=st.sampled_from([3_600_000, 86_400_000, 7 * 86_400_000]),
)


def build(ops, log_partition: int = 5) -> Script:
    s = Script(log_partition=log_partition)
    gens = {g: 0 for g in GROUPS}
    for o in ops:
        if apply_offset_op(s, o):
            continue
        if o[0] == "generation":
            gens[o[1]] += 1
            s.generation(o[1], gens[o[1]], o[2], protocol="cooperative-sticky" if o[3] else "range")
        elif o[0] == "owner":
            gens[o[1]] += 1
            s.generation(o[1], gens[o[1]], {o[3]: [], o[2]: list(TPS)})
        elif o[0] == "meta":
            expire = None if o[5] is None else -1 if o[5] < 0 else s.start_ms + s.clock + o[5] * 3_600_000
            s.commit(o[1], {o[2]: o[3]}, metadata=o[4], expire_timestamp=expire,
                     producer=None if o[6] is None else (o[6], 0))
        elif o[0] == "delete_group":
            s.delete_group(o[1], list(TPS))
        elif o[0] == "multi":  # several partitions in one batch, maybe compressed, maybe transactional
            s.commit(o[1], {tp: o[2] + i for i, tp in enumerate(TPS)}, leader_epoch=2,
                     producer=(7, 0) if o[4] else None, compression=o[3])
        else:
            s.clock += o[1] * 3_600_000
    return s


LOOPS = [pytest.param(True, id="python")] + ([pytest.param(False, id="c")] if have_compiled("kgtool.offsets._replay") else [])


def columnar_audit(entries, opts: AuditOptions, pure: bool, max_rows: int) -> dict:
    """The audit through the columnar path: entries -> chunks of commit columns -> feed()."""
    from kgtool.offsets.partition import PartitionReplay

    tables: dict = {name: [] for name in TABLE_NAMES}
    parts = sorted({e.log_partition for e in entries})
    for part in parts:
        items = sorted((e for e in entries if e.log_partition == part), key=lambda x: (x.offset, x.position))
        if not items:
            continue
        out: list = []
        rp = PartitionReplay(part, opts, sink=out.append, pure=pure)
        keys = ToyKeys()
        for chunk in to_chunks(items, keys, max_rows):
            rp.feed(chunk, keys)
        rp.finish()
        for t in out:
            tables["commits"].extend(t.to_pylist())
        tables["generations"] += rp.generations
        tables["members"] += member_dicts(rp.members)
        tables["findings"] += rp.findings
        tables["offsets"] += rp.offset_rows
        cov = rp.coverage()
        tables["coverage"].append(cov)
    return tables


def assert_same(entries, opts: AuditOptions, pure: bool, max_rows: int = 5) -> None:
    new = audit_entries(entries, options=opts, pure=pure)
    old = oracle_audit(entries, options=opts)
    for name in ORACLE_TABLES:
        assert canonical(name, new.tables[name]) == canonical(name, old[name]), name
    col = columnar_audit(entries, opts, pure, max_rows)
    for name in ORACLE_TABLES:
        assert canonical(name, col[name]) == canonical(name, old[name]), ("columnar", name)


@pytest.mark.parametrize("pure", LOOPS)
@settings(max_examples=300, deadline=None)
@given(ops=st.lists(op, max_size=50), opts=options)
def test_partition_replay_equals_oracle(pure, ops, opts):
    assert_same(build(ops).entries(), opts, pure)


@pytest.mark.parametrize("pure", LOOPS)
def test_samples_equal_oracle(pure):
    for script in samples.sample_scripts():
        entries = classic_only(script.entries())
        assert_same(entries, AuditOptions(), pure)
        assert_same(entries, AuditOptions(retention_ms=3_600_000, since=START + 86_400_000), pure)


def classic_only(entries: list) -> list:
    """The log without its consumer-protocol groups: the oracle knows classic groups only
    (consumer groups are held against Kafka's own logs, tests/kip848)."""
    modern = {e.group for e in entries if e.kind is not None and e.kind.startswith("consumer_group_")}
    return [e for e in entries if e.group not in modern]


@pytest.mark.parametrize("pure", LOOPS)
def test_transactional_commit_counts_for_the_generation_of_its_marker(pure):
    """A transactional commit written before a move and committed by its marker after it counts
    as the new owners' commit (the zombie rule's "since the move"), so a later lower commit is a
    zombie, not a rewind (found by hypothesis in CI: keep it)."""
    ops = [("commit", "g1", ("t", 0), 0, 0), ("commit", "g1", ("t", 0), 0, 0), ("owner", "g1", "a-1", "a-1"),
           ("multi", "g1", 1, "none", True), ("owner", "g1", "b-1", "a-1"), ("marker", 7, "COMMIT"),
           ("commit", "g1", ("t", 0), 0, 0)]
    entries = build(ops).entries()
    assert_same(entries, AuditOptions(retention_ms=3_600_000), pure, max_rows=1)
    rules = [f["rule"] for f in audit_entries(entries, options=AuditOptions(), pure=pure).tables["findings"]]
    assert "zombie" in rules and "rewind" not in rules


_tp = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5))
_owner_map = st.dictionaries(_tp, st.lists(st.sampled_from(["m1", "m2", "m3"]), min_size=1, max_size=2)
                             .map(lambda ms: tuple(sorted(ms))), max_size=8)


def _key_state(keys: dict) -> np.ndarray:
    """A key state matrix with a recognisable value in every cell (no row left unwritten unseen)."""
    rows = max(keys.values(), default=-1) + 3
    return np.arange(rows * len(K_FIELDS), dtype=np.int64).reshape(rows, len(K_FIELDS)) * 7 + 1


@settings(max_examples=300, deadline=None)
@given(owners=_owner_map, last=_owner_map, keys=st.dictionaries(_tp, st.integers(0, 20), max_size=8),
       moved_at=st.dictionaries(_tp, st.integers(0, 9), max_size=4))
def test_track_moves_twins(owners, last, keys, moved_at):
    """The zombie rule's moves (GroupState._track_moves): the C loop and its Python twin agree on
    the count and the state they leave (the dicts, and the key rows marked moved)."""
    from tests.twins import compiled

    from kgtool.offsets.generations import track_moves_py

    c = compiled("kgtool.offsets._replay").track_moves
    py_last, py_moved_at, py_k = dict(last), dict(moved_at), _key_state(keys)
    c_last, c_moved_at, c_k = dict(last), dict(moved_at), _key_state(keys)
    n_py = track_moves_py(owners, py_last, keys, py_moved_at, 42, py_k)
    n_c = c(owners, c_last, keys, c_moved_at, 42, c_k)
    moved = {tp for tp, o in owners.items() if tp in last and last[tp] != o}
    assert n_c == n_py == len(moved)
    assert c_last == py_last and c_moved_at == py_moved_at
    assert np.array_equal(c_k, py_k)
    marked = sorted({keys[tp] for tp in moved if tp in keys})
    assert (py_k[marked, K["moved"]] == 42).all() and (py_k[marked, K["top_has"]] == 0).all()
    untouched = np.setdiff1d(np.arange(len(py_k)), marked)
    assert np.array_equal(py_k[untouched], _key_state(keys)[untouched])


@settings(max_examples=300, deadline=None)
@given(owners=st.dictionaries(_tp, st.lists(st.sampled_from(["m1", "m2", "m3"]), max_size=2)
                              .map(lambda ms: tuple(sorted(ms))), max_size=8),
       keys=st.dictionaries(_tp, st.integers(0, 20), max_size=8).filter(lambda d: len(set(d.values())) == len(d)),
       known=st.lists(st.lists(st.sampled_from(["m1", "m2", "m3"]), max_size=2).map(lambda ms: tuple(sorted(ms))),
                      unique=True, max_size=4))
def test_attribute_keys_twins(owners, keys, known):
    """A generation's snapshot (GroupState._attribute): the C loop and its Python twin give every
    key the same owner-list code (new lists interned alike) and no orphan state, and return the
    same unowned partitions."""
    from tests.twins import compiled

    from kgtool.offsets.generations import OwnerLists, attribute_keys_py

    c = compiled("kgtool.offsets._replay").attribute_keys
    results = []
    for f in (attribute_keys_py, c):
        lists = OwnerLists()
        for o in known:
            lists.code(o)
        kk = _key_state(keys)
        unowned = f(keys, owners, lists.known, lists.code, kk)
        results.append((sorted(unowned), kk, lists.lists))
    (py_unowned, py_k, py_lists), (c_unowned, c_k, c_lists) = results
    assert c_unowned == py_unowned == sorted((tp, k) for tp, k in keys.items() if not owners.get(tp))
    assert np.array_equal(c_k, py_k) and c_lists == py_lists
    for tp, k in keys.items():
        assert py_lists[py_k[k, K["owners"]]] == owners.get(tp, ()) and py_k[k, K["orphan"]] == 0


def test_attribute_keys_rejects_a_key_outside_the_matrix():
    from tests.twins import compiled

    c = compiled("kgtool.offsets._replay")
    kk = np.zeros((2, len(K_FIELDS)), np.int64)
    with pytest.raises(IndexError):
        c.attribute_keys({("t", 0): 5}, {}, {}, lambda o: 0, kk)
    with pytest.raises(IndexError):
        c.track_moves({("t", 0): ("b",)}, {("t", 0): ("a",)}, {("t", 0): -1}, {}, 1, kk)
    with pytest.raises(ValueError):
        c.attribute_keys({}, {}, {}, lambda o: 0, np.zeros((2, 3), np.int64))


_row_values = st.one_of(st.none(), st.integers(0, 3))


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.fixed_dictionaries({"log_partition": st.integers(0, 2), "group": st.sampled_from("abc"),
                                            "record_offset": _row_values}), max_size=30),
       as_members=st.booleans())
def test_sort_rows_orders_by_the_whole_key_nulls_last(rows, as_members):
    """sort_rows (one stable sort per key) gives the order of the key tuples, nulls last; the
    members table's tuple rows sort like dicts."""
    from kgtool.offsets.partition import SORT_KEYS, sort_rows
    from kgtool.offsets.tables import MEMBER

    keys = SORT_KEYS["generations"]
    want = sorted(rows, key=lambda r: tuple((r[k] is None, r[k] if r[k] is not None else 0) for k in keys))
    if not as_members:
        got = list(rows)
        sort_rows(got, "generations")
        assert got == want
        return
    def member(r):
        t = [None] * len(MEMBER)
        for k, v in r.items():
            t[MEMBER[k]] = v
        t[MEMBER["member_id"]] = "m"
        return tuple(t)
    got = [member(r) for r in rows]
    sort_rows(got, "members")
    assert got == [member(r) for r in want]


@settings(max_examples=200, deadline=None)
@given(lists=st.lists(st.lists(st.sampled_from(["m1", "m2", "m3"]), max_size=3, unique=True)
                      .map(lambda ms: tuple(sorted(ms))), unique=True, max_size=5),
       picks=st.lists(st.integers(-1, 4), max_size=12))
@example(lists=[("m1",), ("m2",)], picks=[1, 0, 1])  # the one-member shortcut
@example(lists=[("m1",), ("m1", "m2")], picks=[1, 0, -1])
def test_owners_column_gives_each_commit_its_owner_list(lists, picks):
    """The commits table's owners column (a gather over the interned owner lists; a shortcut
    when every list has one member): each row is its list, null for code -1."""
    import pyarrow as pa

    from kgtool.offsets.partition import PartitionReplay

    rp = PartitionReplay(0, AuditOptions())
    for o in lists:
        rp.owner_lists.code(o)
    codes = np.array([c for c in picks if c < len(lists)], np.int64)
    column = rp.arrow.owners_column(codes)
    assert column.type == pa.list_(pa.dictionary(pa.int32(), pa.string()))
    assert column.to_pylist() == [list(lists[c]) if c >= 0 else None for c in codes.tolist()]
