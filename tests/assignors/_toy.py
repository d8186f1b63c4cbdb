"""A toy cooperative assignor for testing kgtool's analysis machinery (never shipped).

It keeps every owned partition a member still subscribes to, deals the rest to the least
loaded subscriber, and, like CooperativeStickyAssignor, withholds a partition that would change
owner while a present member still owns it. It is not Kafka's algorithm: tests using it check
kgtool's bookkeeping (withheld, settle, revoked), never Kafka's output.
"""

from __future__ import annotations

from kgtool.assignors.model import Assignment, GroupSpec


class ToyCooperative:
    name = "cooperative-sticky"

    def assign(self, group: GroupSpec) -> Assignment:
        result: Assignment = {m.member_id: [] for m in group.members}
        subs = {m.member_id: set(m.topics) for m in group.members}
        owner = {}
        for m in group.members:
            for tp in m.owned:
                if tp[0] in subs[m.member_id] and tp not in owner:
                    owner[tp] = m.member_id
        total = sum(group.topics[t].partitions for t in {t for s in subs.values() for t in s})
        quota = -(-total // max(1, len(result)))
        for tp, m in owner.items():
            if len(result[m]) < quota:
                result[m].append(tp)
        taken = {tp for parts in result.values() for tp in parts}
        for t in sorted({t for s in subs.values() for t in s}):
            for p in range(group.topics[t].partitions):
                tp = (t, p)
                if tp in taken:
                    continue
                if tp in owner:  # owner must revoke it first: withheld this round
                    continue
                cands = [m for m in result if t in subs[m]]
                best = min(cands, key=lambda m: (len(result[m]), m))
                result[best].append(tp)
        return result
