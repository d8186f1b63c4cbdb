"""The sample ``__consumer_offsets`` log shipped with kgtool, as scripts.

Two partitions whose groups exercise every rule once, next to its legitimate look-alike:

partition 7 (``orders`` / ``billing`` / ``inventory`` / ``metrics`` topics):
  - ``billing-rewind``: Stable group commits billing-0 = 500, then 420: **rewind**.
  - ``billing-reset``: the group goes Empty, an admin resets billing-0 from 500 to 100:
    no finding (deliberate reset).
  - ``orders-app``: orders-0 moves from member a to b in generation 2; b commits 1500,
    then 1200 arrives (a still committing): **zombie**; orders-1 stays with a and progresses.
  - ``inventory-sync``: a commit for inventory-9, which no member owns: **orphan**.
  - ``inventory-coop``: cooperative-sticky revokes inventory-1 from a (in transit), a commits
    it in onPartitionsRevoked: no finding.
  - ``metrics-agg``: metrics-0 committed with leader epoch 7, later epoch 6:
    **epoch-regression**; metrics-1 commits with epoch -1 (unknown) between: no finding.
  - ``clicks-app`` (``clicks`` topic, eager ``range``): the dynamic member of client ``clicks``
    on 10.0.0.5 is expelled and rejoins with a new member id every minute, six times:
    **rebalance-storm** (the same client rejoining, eager assignor).
  - ``clicks-static``: three static members (``group.instance.id``) restarted one after the
    other, twice: their member ids are replaced in the same generation, no rebalance: no finding.

  - ``search-indexer`` (``search`` topic, consumer protocol, KIP-848): member ``idx-b`` joins,
    ``idx-a`` must give up search-2 and search-3 and never acknowledges it; 45 s later (its
    rebalance timeout) the coordinator fences it: **slow-revocation**.
  - ``search-quick``: the same, but the member leaves on its own 10 s into the revocation: no
    finding.

partition 23 (``payments`` / ``ledger`` / ``events``):
  - ``payments-eos``: a transactional commit payments-0 = 900 is ABORTed and nothing
    replaces it: **aborted-txn**.
  - ``payments-retry``: aborted, then retried and COMMITted: no finding.
  - ``ledger-eos``: a transactional commit of ledger-0 = 77 with no marker at the end:
    **pending-txn**; ``ledger-ok``: the same, COMMITted: no finding.
  - ``legacy-batch``: Empty since day 0: at the log's end (day 9) its offset is past the
    7-day retention: **expiring**; ``nightly-job``: Empty since day 5: no finding.
  - ``events-stream``: a Stable group committing all along (compressed batches), whose last
    commit on day 9 is the log's end.
"""

from __future__ import annotations

from kgtool.offsets.scenario import Script

DAY = 24 * 3600 * 1000
MINUTE = 60 * 1000


def partition_7() -> Script:
    s = Script(log_partition=7)
    # billing-rewind
    s.generation("billing-rewind", 1, {"billing-1": [("billing", 0)]})
    s.commit("billing-rewind", {("billing", 0): 500}, leader_epoch=3)
    s.commit("billing-rewind", {("billing", 0): 420}, leader_epoch=3)
    # billing-reset
    s.generation("billing-reset", 1, {"billing-2": [("billing", 0)]})
    s.commit("billing-reset", {("billing", 0): 500}, leader_epoch=3)
    s.generation("billing-reset", 2, {})
    s.commit("billing-reset", {("billing", 0): 100})
    # orders-app
    s.generation("orders-app", 1, {"orders-a": [("orders", 0), ("orders", 1)]}, compression="gzip")
    s.commit("orders-app", {("orders", 0): 1000, ("orders", 1): 1000}, leader_epoch=5, compression="gzip")
    s.generation("orders-app", 2, {"orders-a": [("orders", 1)], "orders-b": [("orders", 0)]},
                 topics=["orders"], owned={"orders-a": [("orders", 0), ("orders", 1)]})
    s.commit("orders-app", {("orders", 0): 1500}, leader_epoch=5)
    s.commit("orders-app", {("orders", 1): 1300}, leader_epoch=5)
    s.commit("orders-app", {("orders", 0): 1200}, leader_epoch=5)
    # inventory-sync
    s.generation("inventory-sync", 1, {"inv-1": [("inventory", 0), ("inventory", 1)]})
    s.commit("inventory-sync", {("inventory", 0): 10, ("inventory", 9): 4})
    # inventory-coop
    s.generation("inventory-coop", 1, {"coop-a": [("inventory", 0), ("inventory", 1)]},
                 protocol="cooperative-sticky")
    s.generation("inventory-coop", 2, {"coop-a": [("inventory", 0)], "coop-b": []},
                 protocol="cooperative-sticky", topics=["inventory"],
                 owned={"coop-a": [("inventory", 0), ("inventory", 1)]})
    s.commit("inventory-coop", {("inventory", 1): 33})
    s.generation("inventory-coop", 3, {"coop-a": [("inventory", 0)], "coop-b": [("inventory", 1)]},
                 protocol="cooperative-sticky", topics=["inventory"])
    s.commit("inventory-coop", {("inventory", 1): 40})
    # metrics-agg
    s.generation("metrics-agg", 1, {"m-1": [("metrics", 0), ("metrics", 1)]}, compression="zstd")
    s.commit("metrics-agg", {("metrics", 0): 70, ("metrics", 1): 70}, leader_epoch=7)
    s.commit("metrics-agg", {("metrics", 1): 80}, leader_epoch=-1)
    s.commit("metrics-agg", {("metrics", 0): 90}, leader_epoch=6, compression="lz4")
    # clicks-app: a consumer that keeps exceeding max.poll.interval.ms
    clicks = [("clicks", p) for p in range(4)]
    s.generation("clicks-app", 1, {"clicks-0a": clicks[:2], "feed-1": clicks[2:]}, at=MINUTE,
                 clients={"clicks-0a": ("clicks", "/10.0.0.5"), "feed-1": ("feed", "/10.0.0.6")})
    for i in range(2, 8):
        mid = f"clicks-{i}a"
        s.generation("clicks-app", i, {mid: clicks[:2], "feed-1": clicks[2:]}, at=i * MINUTE,
                     clients={mid: ("clicks", "/10.0.0.5"), "feed-1": ("feed", "/10.0.0.6")})
    # clicks-static: a rolling restart of static members (KIP-345): same generation, no rebalance
    static = {f"web-{n}": f"web-{n}-0" for n in range(3)}

    def web(members: dict[str, str]) -> dict[str, tuple[str, str]]:
        return {m: ("web", f"/10.0.1.{n}") for n, m in enumerate(members.values())}

    s.generation("clicks-static", 1, {m: [clicks[n]] for n, m in enumerate(static.values())},
                 instance_ids={m: i for i, m in static.items()}, at=10 * MINUTE, clients=web(static))
    for restart in range(1, 3):
        for n, inst in enumerate(static):
            static[inst] = f"{inst}-{restart}"
            s.generation("clicks-static", 1, {m: [clicks[k]] for k, m in enumerate(static.values())},
                         instance_ids={m: i for i, m in static.items()}, at=(10 + restart) * MINUTE + n * 20_000,
                         clients=web(static))
    # search-indexer and search-quick: consumer-protocol groups (KIP-848)
    search_id = "c2VhcmNoLXRvcGljLWlkAA"  # the topic id, as ConsumerGroupPartitionMetadata names it
    _kip848_revocation(s, "search-indexer", search_id, at=20 * MINUTE, leave_after=45_000)
    _kip848_revocation(s, "search-quick", search_id, at=22 * MINUTE, leave_after=10_000)
    return s


def _kip848_revocation(s: Script, group: str, topic_id: str, *, at: int, leave_after: int) -> None:
    """A consumer group (KIP-848) as ``GroupMetadataManager`` writes it: member a holds search-0..3;
    b joins (epoch 2), a must revoke search-2 and -3 and stays UNREVOKED_PARTITIONS; ``leave_after``
    ms later a is removed (the same records for a fence and a leave), b gets everything (epoch 3)."""
    key = {"group_id": group}

    def member(mid: str) -> tuple[str, dict, dict]:
        return ("consumer_group_member_metadata", {**key, "member_id": mid}, {
            "client_id": f"{group}-{mid}", "client_host": f"/10.0.4.{1 + (mid == 'idx-b')}", "instance_id": None,
            "rack_id": None, "subscribed_topic_names": ["search"], "subscribed_topic_regex": None,
            "rebalance_timeout_ms": 45_000, "server_assignor": "uniform", "classic_member_metadata": None})

    def parts(ps: list[int]) -> list[dict]:
        return [{"topic_id": topic_id, "partitions": ps}] if ps else []

    def target(mid: str, ps: list[int]) -> tuple[str, dict, dict]:
        return ("consumer_group_target_assignment_member", {**key, "member_id": mid}, {"topic_partitions": parts(ps)})

    def current(mid: str, epoch: int, prev: int, state: int, ps: list[int], pending: list[int] = []) -> tuple:  # noqa: B006
        return ("consumer_group_current_member_assignment", {**key, "member_id": mid}, {
            "member_epoch": epoch, "previous_member_epoch": prev, "state": state, "assigned_partitions": parts(ps),
            "partitions_pending_revocation": parts(pending)})

    def epoch(n: int) -> list[tuple]:
        return [("consumer_group_metadata", key, {"epoch": n})]

    def assignment_epoch(n: int) -> tuple:
        return ("consumer_group_target_assignment_metadata", key, {"assignment_epoch": n})

    meta = ("consumer_group_partition_metadata", key,
            {"topics": [{"topic_id": topic_id, "topic_name": "search", "num_partitions": 4}]})
    s.batch([member("idx-a"), meta, *epoch(1), target("idx-a", [0, 1, 2, 3]), assignment_epoch(1),
             current("idx-a", 1, 0, 0, [0, 1, 2, 3])], at=at)
    s.batch([member("idx-b"), *epoch(2), target("idx-a", [0, 1]), target("idx-b", [2, 3]), assignment_epoch(2),
             current("idx-b", 2, 0, 2, [])], at=at + 1_000)  # UNRELEASED_PARTITIONS: a still holds 2 and 3
    s.batch([current("idx-a", 1, 0, 1, [0, 1], [2, 3])], at=at + 2_000)  # UNREVOKED_PARTITIONS
    s.commit(group, {("search", 0): 10, ("search", 2): 20}, at=at + 3_000)
    gone = at + 2_000 + leave_after
    s.batch([("consumer_group_current_member_assignment", {**key, "member_id": "idx-a"}, None),
             ("consumer_group_target_assignment_member", {**key, "member_id": "idx-a"}, None),
             ("consumer_group_member_metadata", {**key, "member_id": "idx-a"}, None),
             *epoch(3), target("idx-b", [0, 1, 2, 3]), assignment_epoch(3)], at=gone)
    s.batch([current("idx-b", 3, 2, 0, [0, 1, 2, 3])], at=gone + 800)
    s.commit(group, {("search", 0): 15, ("search", 2): 25}, at=gone + 5_000)


def partition_23() -> Script:
    s = Script(log_partition=23)
    s.generation("events-stream", 1, {"ev-1": [("events", 0)]}, compression="snappy")
    # legacy-batch: Empty since day 0
    s.generation("legacy-batch", 1, {"lb-1": [("events", 0)]})
    s.commit("legacy-batch", {("events", 0): 12})
    s.generation("legacy-batch", 2, {})
    # payments-eos: aborted, nothing replaces it
    s.generation("payments-eos", 1, {"pay-1": [("payments", 0)]})
    s.commit("payments-eos", {("payments", 0): 800})
    s.commit("payments-eos", {("payments", 0): 900}, producer=(4001, 0))
    s.marker((4001, 0), "ABORT", coordinator_epoch=2)
    # payments-retry: aborted, retried and committed
    s.generation("payments-retry", 1, {"pr-1": [("payments", 0)]})
    s.commit("payments-retry", {("payments", 0): 900}, producer=(4002, 0))
    s.marker((4002, 0), "ABORT", coordinator_epoch=2)
    s.commit("payments-retry", {("payments", 0): 900}, producer=(4002, 1))
    s.marker((4002, 1), "COMMIT", coordinator_epoch=2)
    # ledger-ok: committed
    s.generation("ledger-ok", 1, {"lo-1": [("ledger", 0)]})
    s.commit("ledger-ok", {("ledger", 0): 55}, producer=(4004, 0))
    s.marker((4004, 0), "COMMIT", coordinator_epoch=2)
    s.commit("events-stream", {("events", 0): 100}, at=1 * DAY, compression="gzip")
    # nightly-job: Empty since day 5
    s.generation("nightly-job", 1, {"nj-1": [("events", 0)]}, at=5 * DAY)
    s.commit("nightly-job", {("events", 0): 30})
    s.generation("nightly-job", 2, {})
    # ledger-eos: no marker by the end
    s.commit("ledger-eos", {("ledger", 0): 77}, producer=(4003, 0), at=8 * DAY)
    s.commit("events-stream", {("events", 0): 200}, at=9 * DAY, compression="zstd")
    return s


def sample_scripts() -> list[Script]:
    return [partition_7(), partition_23()]


def write_sample(root: str) -> list[str]:
    """Write the sample log under ``root/__consumer_offsets-N/``; returns the segment paths."""
    from kgtool.offsets.writer import write_segment

    return [write_segment(s, f"{root}/__consumer_offsets-{s.log_partition}") for s in sample_scripts()]


if __name__ == "__main__":  # python -m kgtool.offsets.samples DIR: regenerate the sample
    import sys

    for p in write_sample(sys.argv[1] if len(sys.argv) > 1 else "kgtool/data/sample_offsets"):
        print(p)
