"""``spark-audit --group``: the matched groups as ``kafka-consumer-groups.sh`` describes them.

Rows of the ``groups`` and ``group_members`` tables (:mod:`kgtool.offsets.tables`: the state the
group coordinator holds once it has loaded the log, at its end or at ``--until``), printed with the
columns, values and notes of Kafka 4's ``ConsumerGroupCommand``:

- ``--describe --state --verbose`` (``printStates``): GROUP, COORDINATOR (ID), ASSIGNMENT-STRATEGY,
  STATE, GROUP-EPOCH, TARGET-ASSIGNMENT-EPOCH, #MEMBERS. A classic group has no group epoch nor
  target assignment epoch (``-``). Offline the coordinator broker is unknown: its column names the
  log partition, ``__consumer_offsets-N``.
- ``--describe --members --verbose`` (``printMembers``): GROUP, CONSUMER-ID, GROUP-INSTANCE-ID (only
  when a member has one), HOST, CLIENT-ID, #PARTITIONS, CURRENT-EPOCH, CURRENT-ASSIGNMENT,
  TARGET-EPOCH, TARGET-ASSIGNMENT, and UPGRADED when a consumer group has members of both
  protocols (true: the member uses the consumer protocol). A classic group's members have no epochs
  nor target (``-``). Assignments as ``getAssignmentString``: ``orders:0,1,2;payments:3``.
- ``shouldPrintMemberState``'s notes: an Empty group "has no active members"; a group in
  Assigning, Reconciling, PreparingRebalance or CompletingRebalance "is rebalancing".

Share groups (KIP-932) as Kafka 4.4's ``ShareGroupCommand`` describes them (``--state --verbose``:
GROUP, COORDINATOR (ID), STATE, GROUP-EPOCH, ASSIGNMENT-EPOCH, #MEMBERS; ``--members --verbose``:
GROUP, CONSUMER-ID, HOST, CLIENT-ID, #PARTITIONS, MEMBER-EPOCH, ASSIGNMENT), and streams groups
(KIP-1071) as ``StreamsGroupCommand`` (``--state --verbose``: GROUP, COORDINATOR (ID), ASSIGNOR,
STATE, GROUP-EPOCH, TARGET-ASSIGNMENT-EPOCH, #MEMBERS; ``--members --verbose``: GROUP,
TARGET-ASSIGNMENT-EPOCH, TOPOLOGY-EPOCH, MEMBER, MEMBER-PROTOCOL, MEMBER-EPOCH, PROCESS, CLIENT-ID,
then the tasks, each kind in its own column as ``subtopology:0,1;other:2``).
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from kgtool.cli import render

MISSING = render.MISSING  # ConsumerGroupCommand.MISSING_COLUMN_VALUE

STATE_COLUMNS = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                 "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS")
#: ConsumerGroupCommand.shouldPrintMemberState: the states it warns about.
REBALANCING = frozenset({"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"})


def assignment_string(partitions: list[str] | None) -> str:
    """``ConsumerGroupCommand.getAssignmentString`` of sorted ``topic-partition`` names: per topic
    ``topic:p,p`` (partitions in numeric order), topics joined by ``;`` in string order;
    :data:`MISSING` when there is none.

    >>> assignment_string(["payments-3", "orders-10", "orders-2"])
    'orders:2,10;payments:3'
    """
    if not partitions:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for name in partitions:
        topic, _, partition = name.rpartition("-")
        by_topic.setdefault(topic, []).append(int(partition))
    parts = [f"{topic}:" + ",".join(map(str, sorted(ps))) for topic, ps in by_topic.items()]
    # Java's String.compareTo compares UTF-16 code units
    return ";".join(sorted(parts, key=lambda s: s.encode("utf-16-be")))


def coordinator(log_partition: int) -> str:
    """The COORDINATOR (ID) cell: the log partition the group's records are in."""
    return f"__consumer_offsets-{log_partition}" if log_partition >= 0 else MISSING


def _value(v: Any) -> str:
    return MISSING if v is None else str(v)


def state_row(g: dict[str, Any]) -> list[str]:
    """A groups-table row as ``--describe --state --verbose`` prints it (plain text)."""
    return [g["group"], coordinator(g["log_partition"]), g["assignor"] or MISSING, g["state"],
            _value(g["group_epoch"]), _value(g["assignment_epoch"]), str(g["member_count"])]


def upgraded(m: dict[str, Any]) -> bool | None:
    """``MemberDescription.upgraded``: whether a consumer group's member uses the consumer protocol;
    None for a classic group's."""
    return None if m["type"] == "classic" else not m["uses_classic_protocol"]


def member_columns(members: list[dict[str, Any]]) -> list[str]:
    """The header of ``--describe --members --verbose`` for these members (one group's)."""
    cols = ["GROUP", "CONSUMER-ID"]
    if any(m["instance_id"] for m in members):
        cols.append("GROUP-INSTANCE-ID")
    cols += ["HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
             "TARGET-ASSIGNMENT"]
    kinds = {upgraded(m) for m in members}
    if True in kinds and False in kinds:
        cols.append("UPGRADED")
    return cols


def member_row(m: dict[str, Any], columns: list[str]) -> list[str]:
    """A group_members row as ``--describe --members --verbose`` prints it, in ``columns``."""
    up = upgraded(m)
    cells = {
        "GROUP": m["group"],
        "CONSUMER-ID": m["member_id"],
        "GROUP-INSTANCE-ID": m["instance_id"] or "",
        "HOST": m["client_host"],
        "CLIENT-ID": m["client_id"],
        "#PARTITIONS": str(len(m["assigned"] or ())),
        "CURRENT-EPOCH": _value(m["member_epoch"]),
        "CURRENT-ASSIGNMENT": assignment_string(m["assigned"]),
        "TARGET-EPOCH": _value(m["target_epoch"]),
        "TARGET-ASSIGNMENT": assignment_string(m["target"]),
        "UPGRADED": MISSING if up is None else str(up).lower(),
    }
    return [cells[c] for c in columns]


def notes(g: dict[str, Any], shown_members: int) -> list[str]:
    """What Kafka's tool says of the group's state, and what kgtool adds (plain text)."""
    out = []
    if g["state"] == "Empty":
        out.append(f"Consumer group '{g['group']}' has no active members.")
    elif g["state"] in REBALANCING:
        out.append(f"Warning: Consumer group '{g['group']}' is rebalancing.")
    if shown_members < g["member_count"]:
        out.append(f"the first {shown_members:,} of its {g['member_count']:,} members are shown")
    return out


_IDS = frozenset({"GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID"})


def _cell(column: str, text: str) -> str:
    """Ids as every kgtool table shows them (quoted when blank or unprintable, cut at
    DISPLAY_LIMIT); other cells as they are, markup escaped."""
    if column == "GROUP-INSTANCE-ID" and not text:
        return ""  # a dynamic member, among static ones: Kafka leaves the cell blank
    if column in _IDS and text != MISSING:
        return render.display_text(text, limit=render.DISPLAY_LIMIT)
    return escape(text)


def _fits(c: Any, table: Any) -> bool:
    return c.measure(table, options=c.options.update_width(1 << 16)).maximum <= c.width  # unclamped


def _fitted(c: Any, columns: list[str], rows: list[list[str]], whole: frozenset[str] = frozenset(),
            **kw: Any) -> Any:
    """A Rich table of these cells: as Kafka prints them when they fit on one line; else headers
    break after their hyphens (CURRENT-/EPOCH), assignments after each topic's ``;`` and short
    values stay whole, before ids are cut."""
    table = render.table(columns, rows, **kw)
    if _fits(c, table):
        return table
    heads = [col.replace("-", "-\n") for col in columns]
    cells = [[v.replace(";", ";\n") if col in _ASSIGNMENTS else v for col, v in zip(columns, r)] for r in rows]
    table = render.table(heads, cells, **kw)
    for i, col in enumerate(columns):
        if col in _WHOLE or col in whole:
            table.columns[i].no_wrap = True
    return table


_ASSIGNMENTS = frozenset({"CURRENT-ASSIGNMENT", "TARGET-ASSIGNMENT"})
#: Short values never cut: the id columns give up the width.
_WHOLE = frozenset({"STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS", "#PARTITIONS", "CURRENT-EPOCH",
                    "TARGET-EPOCH", "UPGRADED"})


def _members_tables(c: Any, columns: list[str], rows: list[list[str]], title: str) -> list[Any]:
    """One group's members table; on a console too narrow for it, two, keyed by CONSUMER-ID: the
    columns of ``--describe --members`` and those ``--verbose`` adds (GROUP left out: the title
    names the group)."""
    table = render.table(columns, rows, title=title)
    if _fits(c, table):
        return [table]
    split = columns.index("#PARTITIONS") + 1
    first = list(range(1, split))
    key = columns.index("CONSUMER-ID")
    second = [key] + list(range(split, len(columns)))
    # KIP-848 member ids (22 characters) stay whole: the key of the second table; a classic
    # member id (client id + UUID) folds
    whole = frozenset({"CONSUMER-ID"}) if max(len(r[key]) for r in rows) <= 24 else frozenset()
    return [_fitted(c, [columns[i] for i in part], [[r[i] for i in part] for r in rows], whole,
                    title=title + (" 1/2" if part is first else " 2/2"))
            for part in (first, second)]


SHARE_STATE_COLUMNS = ("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS")
SHARE_MEMBER_COLUMNS = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT")
STREAMS_STATE_COLUMNS = ("GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH",
                         "#MEMBERS")
STREAMS_MEMBER_COLUMNS = ("GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL",
                          "MEMBER-EPOCH", "PROCESS", "CLIENT-ID", "ACTIVE", "STANDBY", "WARMUP", "TARGET-ACTIVE",
                          "TARGET-STANDBY", "TARGET-WARMUP")


def tasks_string(items: list[str] | None) -> str:
    """A ``*_tasks`` column (``["0:0,1", "1:2"]``) as the console shows it: ``0:0,1;1:2``."""
    return ";".join(items) if items else MISSING


def share_state_row(g: dict[str, Any]) -> list[str]:
    return [g["group"], coordinator(g["log_partition"]), g["state"], _value(g["group_epoch"]),
            _value(g["assignment_epoch"]), str(g["member_count"])]


def share_member_row(m: dict[str, Any]) -> list[str]:
    return [m["group"], m["member_id"], m["client_host"], m["client_id"], str(len(m["assigned"] or ())),
            _value(m["member_epoch"]), assignment_string(m["assigned"])]


def streams_state_row(g: dict[str, Any]) -> list[str]:
    # the assignor is the broker's group.streams.assignor (not in the log): unknown offline
    return [g["group"], coordinator(g["log_partition"]), MISSING, g["state"], _value(g["group_epoch"]),
            _value(g["assignment_epoch"]), str(g["member_count"])]


def streams_member_row(m: dict[str, Any], g: dict[str, Any]) -> list[str]:
    return [m["group"], _value(g["assignment_epoch"]), _value(m["topology_epoch"]), m["member_id"], "streams",
            _value(m["member_epoch"]), m["process_id"] or MISSING, m["client_id"],
            tasks_string(m["active_tasks"]), tasks_string(m["standby_tasks"]), tasks_string(m["warmup_tasks"]),
            tasks_string(m["target_active_tasks"]), tasks_string(m["target_standby_tasks"]),
            tasks_string(m["target_warmup_tasks"])]


_KIND = {"share": "Share group", "streams": "Streams group"}


def _print_typed(c: Any, kind: str, described: list[dict[str, Any]], at: str) -> None:
    """The share or streams groups among the described ones: their state table, then members."""
    groups = [d["group"] for d in described]
    if kind == "share":
        cols, rows, tool = SHARE_STATE_COLUMNS, [share_state_row(g) for g in groups], "kafka-share-groups.sh"
    else:
        cols, rows, tool = STREAMS_STATE_COLUMNS, [streams_state_row(g) for g in groups], "kafka-streams-groups.sh"
    c.print(_fitted(c, list(cols), [[_cell(col, v) for col, v in zip(cols, r)] for r in rows],
                    title=f"{kind} groups {at} ({tool} --describe --state --verbose)",
                    caption="COORDINATOR (ID): the log partition"))
    for d in described:
        g, members = d["group"], d["members"]
        name = render.display_text(g["group"], limit=render.DISPLAY_LIMIT)
        if members:
            if kind == "share":
                mcols, mrows = SHARE_MEMBER_COLUMNS, [share_member_row(m) for m in members]
            else:
                mcols, mrows = STREAMS_MEMBER_COLUMNS, [streams_member_row(m, g) for m in members]
            keep = [i for i, col in enumerate(mcols) if i < 8 or any(r[i] != MISSING for r in mrows)]
            mcols = [mcols[i] for i in keep]
            c.print(_fitted(c, mcols, [[_cell(col, r[i]) for col, i in zip(mcols, keep)] for r in mrows],
                            title=f"members of {name}, a {kind} group {at} ({tool} --describe --members --verbose)"))
        else:
            c.print(f"[bold]members of {name}[/bold], a {kind} group {at}: none")
        if g["state"] == "Empty":
            c.print(escape(f"{_KIND[kind]} '{g['group']}' has no active members."), style="dim")
        elif g["state"] == "NotReady":
            c.print(escape(f"{_KIND[kind]} '{g['group']}' is not ready: no topology validated at its epoch "
                           f"(topology epoch {_value(g.get('topology_epoch'))}, validated "
                           f"{_value(g.get('validated_topology_epoch'))})."), style="dim")
        elif g["state"] in REBALANCING:
            c.print(escape(f"Warning: {_KIND[kind]} '{g['group']}' is rebalancing."), style="dim")
        if kind == "share" and (g.get("share_initializing") or g.get("share_initialized") or g.get("share_deleting")):
            c.print(escape("share state: initialized " + assignment_string(g.get("share_initialized"))
                           + ", initializing " + assignment_string(g.get("share_initializing"))
                           + ", deleting " + (", ".join(g.get("share_deleting") or ()) or MISSING)), style="dim")
        if len(members) < g["member_count"]:
            c.print(f"the first {len(members):,} of its {g['member_count']:,} members are shown", style="dim")
        if g["incomplete"]:
            c.print(f"[yellow]incomplete:[/yellow] {name}: {render.display_text(g['incomplete'])} "
                    "(the replay could not follow the group past this point: its state is as far as it got)")


def print_views(described: dict[str, dict[str, Any]], until: int | None, total: int | None = None) -> None:
    """The state table of the described groups, then each group's members table and notes
    (classic and consumer groups as ``kafka-consumer-groups.sh``, share and streams groups as their
    own tools).

    ``total``: how many groups matched (the audit describes at most 20 per log partition)."""
    if not described:
        return
    c = render.out()
    at = f"at {render.iso_ms(until)}" if until is not None else "at the end of the log"
    for kind in ("share", "streams"):
        typed = [d for d in described.values() if d["group"]["type"] == kind]
        if typed:
            _print_typed(c, kind, typed, at)
    described = {k: d for k, d in described.items() if d["group"]["type"] not in ("share", "streams")}
    if not described:
        return
    groups = [d["group"] for d in described.values()]
    incomplete = sum(1 for g in groups if g["incomplete"])
    inexact = sum(1 for g in groups if g.get("exact") is False)
    c.print(_fitted(
        c, list(STATE_COLUMNS),
        [[_cell(col, v) for col, v in zip(STATE_COLUMNS, state_row(g))] for g in groups],
        title=f"groups {at} (kafka-consumer-groups.sh --describe --state --verbose)"
              + (f": {len(groups):,} of the {total:,} matching" if total and total > len(groups) else ""),
        caption="COORDINATOR (ID): the log partition" + (f"; {incomplete} incomplete: see below" if incomplete else "")
                + (f"; {inexact} not exact: the instant is inside a compacted log's cleaned range, these rows are "
                   "what the log still holds" if inexact else ""),
    ))
    for d in described.values():
        g, members = d["group"], d["members"]
        name = render.display_text(g["group"], limit=render.DISPLAY_LIMIT)
        if members:
            columns = member_columns(members)
            for table in _members_tables(
                    c, columns, [[_cell(col, v) for col, v in zip(columns, member_row(m, columns))] for m in members],
                    f"members of {name}, a {g['type']} group {at} (--describe --members --verbose)"):
                c.print(table)
        else:
            c.print(f"[bold]members of {name}[/bold], a {g['type']} group {at}: none")
        for line in notes(g, len(members)):
            c.print(escape(line), style="dim")
        if g["incomplete"]:
            c.print(f"[yellow]incomplete:[/yellow] {name}: {render.display_text(g['incomplete'])} "
                    "(the replay could not follow the group past this point: its state is as far as it got)")
