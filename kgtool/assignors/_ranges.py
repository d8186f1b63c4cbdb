"""Plain range arithmetic shared by ``range`` and ``server-range``, laid out for speed."""

from __future__ import annotations

from itertools import repeat

from kgtool.assignors.model import TopicPartition


def assign_ranges(topic_order: list[str], partitions: dict[str, int], subscribers: dict[str, list[str]],
                  out: dict[str, list[TopicPartition]]) -> None:
    """Range assignment of every topic to its subscribers (member ids, in assignment order).

    This is client ``RangeAssignor.assignRanges(t, (c, tp) -> true, ...)`` with nothing assigned
    yet and the group coordinator's ``RangeAssignor.addPartitionsToAssignment``: member ``i`` of
    ``k`` gets ``n // k`` partitions starting at ``(n // k) * i + min(i, n % k)``, one more if ``i < n % k``;
    topics are appended in ``topic_order``.

    Layout: when every topic has the same subscribers and the same partition count ``n`` (the
    usual large group), the partitions are laid out topic-major in one list ``flat`` and member
    ``i``'s list is ``flat[s + r + j*n]`` for topic ``j`` and ``r`` in its range: ``len(range)``
    strided slices per member, so the work is one C-level copy per partition.
    """
    if not topic_order:
        return
    first = subscribers[topic_order[0]]
    n0 = partitions[topic_order[0]]
    if all(subscribers[t] is first for t in topic_order) and all(partitions[t] == n0 for t in topic_order):
        k = len(first)
        if k == 0:
            return
        flat: list[TopicPartition] = []
        for t in topic_order:
            flat.extend(zip(repeat(t, n0), range(n0)))
        n_topics = len(topic_order)
        per, extra = divmod(n0, k)
        start = 0
        for i, m in enumerate(first):
            length = per + 1 if i < extra else per
            if length == 0:
                break
            if length == 1:
                out[m].extend(flat[start::n0])
            else:
                mine: list = [None] * (n_topics * length)
                for r in range(length):
                    mine[r::length] = flat[start + r :: n0]
                out[m].extend(mine)
            start += length
        return

    for t in topic_order:
        n = partitions[t]
        consumers = subscribers[t]
        k = len(consumers)
        if k == 0:
            continue
        per, extra = divmod(n, k)
        tps = list(zip(repeat(t, n), range(n)))
        if per == 0:
            for i in range(extra):
                out[consumers[i]].append(tps[i])
            continue
        start = 0
        for i, m in enumerate(consumers):
            length = per + 1 if i < extra else per
            out[m].extend(tps[start : start + length])
            start += length
