"""``kgtool spark-audit``: group history and stale-commit findings from ``__consumer_offsets``."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import re
import time
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

import typer

from kgtool.cli import render
from kgtool.cli.render import OutputFormat
from kgtool.errors import FindingsReported, InputError, KgtoolError, UsageError
from kgtool.offsets import catalog

HELP = """Reconstruct consumer-group history from __consumer_offsets segments with PySpark and report stale commits.

PATH is a broker log directory (its __consumer_offsets-N directories are read), a __consumer_offsets-N directory or a segment file, local or on any filesystem Spark's Hadoop layer reads (hdfs://, s3a://). Partition directories of other topics (given, or in a broker log directory) are not audited: their partition.metadata files name topic ids (Kafka 4.1+ writes no ConsumerGroupPartitionMetadata record to name them; a v4 commit's TopicId names its topic first). Local __share_group_state-N directories are replayed as the share coordinator loads them: each share partition's start offset, state epoch and in-flight batches at the end or at --until (table and --format json's share_partitions). Without PATH, the sample log shipped with kgtool is audited.

Each __consumer_offsets partition is audited by one Spark task that replays its segments in log order exactly as Kafka's group coordinator loads the partition. Every change of a group's generation is explained (the rebalances table). Needs Java 17+.

{rules}

Spark's own output (log lines, JVM warnings, Python workers' stderr) stays off the terminal unless asked for with --spark-log-level or --verbose. When Spark fails for lack of resources (out of memory, a lost executor or Python worker, a task failing past spark.task.maxFailures, the JVM gone), one line names the cause and the --conf KEY=VALUE to change, and the exit status is 4.
""".format(rules=catalog.help_paragraph())


class SparkLogLevel(str, enum.Enum):
    """``--spark-log-level`` values (log4j levels)."""

    OFF = "OFF"
    ERROR = "ERROR"
    WARN = "WARN"
    INFO = "INFO"
    DEBUG = "DEBUG"

#: Rule name -> its one-line meaning (the console, the report): from the one rule source.
RULE_MEANINGS = catalog.summaries()

MAN_SECTIONS = {
    "DESCRIPTION": (
        "spark-audit reads the segments of __consumer_offsets partitions. A group's records all "
        "live in its coordinator's partition and a transaction's marker follows its records "
        "there, so each partition is audited by one Spark task, in log order, as Kafka's group "
        "coordinator loads it (GroupMetadataManager.replay, OffsetMetadataManager.replay and "
        "replayEndTransactionMarker): no shuffle, and no record crosses into the JVM. Plain "
        "offset commits, the bulk of any log, are decoded into typed columns and replayed by "
        "compiled code; the task writes its partition's tables itself, and the whole audit is "
        "one Spark job. Memory grows with the number of groups, committed partitions and "
        "producers, not with the number of records. It reconstructs generations (generation id, protocol "
        "type, assignor, leader, members with client id, host, instance id, timeouts, "
        "subscriptions and assignments), offset commits with the generation in effect and the "
        "members owning the partition, transactional commits with their outcome, and the "
        "coverage of each partition.\n\n"
        "A transactional offset commit counts only once its producer's COMMIT marker follows, "
        "and then only if its record offset is greater than the record offset of the offset "
        "already stored (replayEndTransactionMarker); an ABORT drops it; without a marker it is "
        "pending. An offset tombstone also drops the pending transactional offsets of its "
        "partition."
    ),
    "RULES": catalog.man_text(),
    "OUTPUT": (
        "With --out DIR, the tables generations, members, commits, findings, coverage, offsets and rebalances "
        "are written as DIR/<table>/ (Parquet, or JSON Lines with --format jsonl), first into "
        "a temporary directory next to DIR, which is then renamed into place: an interrupted "
        "or failed run leaves DIR as it was, and a re-run replaces it with the same rows. Each "
        "table holds one file per partition (part-NNNNN.parquet or .json, written whole by the "
        "partition's task: a retried task rewrites the same file). Generations, members and "
        "findings are sorted by log partition, group and record offset; commits are in log "
        "order (log partition, record offset); rebalances as generations. The console shows the "
        "coverage, the counts, the findings by rule, the worst groups, the rebalances panel "
        "and, with --group, the groups' state (GROUP STATE below) (--format json: the same as one JSON document; --format jsonl: the findings, one JSON "
        "object per line). On the console, counts and sizes have thousands separators (7,482), "
        "offsets and byte positions are plain (as Kafka's tools print them), times are ISO-8601 "
        "UTC to the millisecond (2024-05-31T16:00:01.000Z); each finding shows its time, then "
        "its message, then where it was read (the segment's path shortened from the left at a "
        "/ to fit the line: .../__consumer_offsets-7/00000000000000000000.log, record offset and "
        "byte position). Bars have a header giving their scale (one block = N); N is 1, 2 or 5 "
        "times a power of ten, the smallest that fits the largest count."
    ),
    "FILTERS": (
        "--group REGEX keeps groups whose id matches (Python re.search). --until TIME reads "
        "the log as it stood at instant TIME: each partition is read in log order up to its "
        "first record stamped at or after TIME (a record stamped T was appended during "
        "millisecond T); that record and everything after it are not read, including later "
        "records stamped before TIME (a coordinator clock that went back: the appends are in "
        "log order). Every table, the coverage and the findings stop there, and the end-of-log "
        "rules (expiring, pending-txn, aborted-txn) and the offsets table's expired column are "
        "judged at TIME. --since TIME hides generations, members, commits and findings before "
        "TIME (the replay still reads them for state; findings about the end of the log and "
        "the offsets table are always shown; a storm that started before TIME is hidden); with "
        "both, --since must be before --until. TIME is "
        "ISO-8601 (UTC unless an offset is given) or epoch milliseconds. --storm N/WINDOW sets "
        "the rebalance-storm rule (WINDOW like 90s, 10m, 1h); a malformed value is a usage error "
        "(exit 2) before Spark starts."
    ),
    "REBALANCES": (
        "The rebalances table has one row per change of a group's generation: a GroupMetadata "
        "record with a new generation id (classic groups), a ConsumerGroupMetadata record with a "
        "new group epoch (KIP-848). A GroupMetadata record that keeps the generation (a static "
        "member that rejoins while the group is Stable gets a new member id without a rebalance, "
        "ClassicGroup.replaceStaticMember) is a row with rebalance false, not left out. Columns: "
        "group, log_partition, protocol, from_generation (null for the group's first record, or "
        "after a group tombstone), to_generation, rebalance, record_offset, position, source, "
        "timestamp, seconds_since_previous (since the group's previous rebalance), members_before, "
        "members_after, joined, left, rejoined (member ids of clients back with a new member id: "
        "the same client id and host, a restart or an expulsion, also when they left in an earlier "
        "rebalance), static_replaced (group.instance.id of static members whose member id was "
        "replaced), protocol_name (the assignor), rebalance_protocol (eager for range, roundrobin "
        "and sticky; cooperative for cooperative-sticky, stream and KIP-848 groups; null when "
        "unknown), partitions_moved (given to other owners than they last had), "
        "partitions_revoked (eager: every partition owned in the previous generation; cooperative: "
        "those leaving their owner), session_timeout_ms and rebalance_timeout_ms (the smallest "
        "recorded among the members), the reconciliation columns, cause and message. Causes: "
        "first-generation, member-joined, member-left, member-rejoined, static-member-replaced, "
        "group-emptied, cooperative-follow-up (KIP-429's second rebalance), leader-change, "
        "assignment-only (same members), member-fenced, subscription-changed, metadata-changed "
        "(KIP-848), kip848-epoch-bump (same members, nothing else seen), same-generation. A KIP-848 "
        "row is completed when the group's next change closes it (its assignment converges after the "
        "epoch bump), with its reconciliation, read between batches as Kafka's loader holds the "
        "group: completed_at (when the group became Stable at that epoch, every member at it with "
        "nothing pending; null if it never did; a classic row: its record's time), "
        "completion_seconds, members_reached (member_id:ms after the bump), revocation_waits "
        "(topic-partition:member_id:ms pending revocation, longest first), consumption_gap_ms and "
        "consumption_gap_partition (the longest time a partition had no owner: given up by one "
        "member, or removed with it, until assigned to the next; open at the log's end: up to "
        "then), target_epoch and assigned_at (the target assignment that served the epoch and when "
        "it was computed: a later epoch's when the coordinator computed none at this one, as after "
        "a departure or, from Kafka 4.3, within group.consumer.assignment.interval.ms of the last; "
        "such a batched epoch is not an unfinished rebalance and the storm rule counts it with the "
        "epoch that served it; null when none came).\n\n"
        "The console shows a rebalances panel: the counts, the storms and the groups with the most "
        "rebalances. With --group, each matching group's generation timeline follows: one line "
        "per generation with its time, members, what changed and why (at most 20 groups per "
        "partition and their last 500 changes). --format json carries the same under rebalances "
        "and timeline."
    ),
    "GROUP STATE": (
        "With --group, the console ends with the state of each matching group as the group coordinator "
        "holds it once it has loaded the log (the groups and group_members tables: at the end of the log "
        "read, or at --until TIME), printed as Kafka 4's kafka-consumer-groups.sh prints it "
        "(ConsumerGroupCommand). First one table as --describe --state --verbose: GROUP, COORDINATOR (ID), "
        "ASSIGNMENT-STRATEGY, STATE, GROUP-EPOCH, TARGET-ASSIGNMENT-EPOCH, #MEMBERS. The coordinator broker is "
        "not known offline: COORDINATOR (ID) shows the log partition, __consumer_offsets-N (- for a segment "
        "outside such a directory). A classic group has no group epoch nor target assignment epoch (-); its "
        "strategy is the protocol its generation chose. A consumer group's strategy is the server assignor "
        "most members ask for; - when none asks, where Kafka shows the broker's default (the first of "
        "group.consumer.assignors, uniform unless configured). Then, per group, a table as --describe "
        "--members --verbose: GROUP, CONSUMER-ID, GROUP-INSTANCE-ID (when a member has one), HOST, CLIENT-ID, "
        "#PARTITIONS, CURRENT-EPOCH, CURRENT-ASSIGNMENT, TARGET-EPOCH, TARGET-ASSIGNMENT, and UPGRADED when a "
        "consumer group has members of both protocols (true: the consumer protocol; false: the classic one). "
        "Assignments read topic:0,1;other:2 (partitions in numeric order, topics sorted), - when empty; a "
        "classic group's members have no epochs nor target (-). Kafka's notes follow: \"Consumer group 'G' "
        "has no active members.\" (Empty) and \"Warning: Consumer group 'G' is rebalancing.\" (Assigning, "
        "Reconciling). A group the replay could not follow (its incomplete column: a record Kafka's loader "
        "refuses) is counted under the state table and its reason printed. When the members table does "
        "not fit the console, it is printed as two tables keyed by CONSUMER-ID (the columns of --describe "
        "--members, then those --verbose adds), headers broken after their hyphens and assignments after "
        "each topic. At most 20 groups per log partition and 500 members per group are shown (the state "
        "table's title then says how many groups matched, its #MEMBERS counts every member). --format json carries the same rows, raw, under describe: "
        "{group: {group: <groups row>, members: [<group_members rows>]}}."
    ),
    "OFFSETS AND RESET PLAN": (
        "The offsets table holds the committed offsets the group coordinator would serve at the "
        "end of the log read (with --until, at that instant): the offset store of "
        "OffsetMetadataManager after the replay, one row per group, topic and partition, with "
        "offset, leader_epoch (-1: none), metadata, commit_timestamp, expire_timestamp (null "
        "unless OffsetCommitValue v1 carried one), record_offset (the commit record that set "
        "it) and expired. An offset tombstone deletes; a transactional commit counts once its "
        "COMMIT marker has been read, and only if its record offset is greater than the stored "
        "offset's (replayEndTransactionMarker); an aborted one never counts and a pending one "
        "is not served. expired is the expiring rule for that offset: true when the coordinator "
        "would delete it at its next expiration check (the group Empty or without metadata, the "
        "offset past --retention or its expire timestamp, no open transaction on it). A group "
        "that only commits (a simple consumer) has its rows too.\n\n"
        "--reset-plan FILE writes the offsets table's rows of the groups selected with --group "
        "(required) as the CSV that kafka-consumer-groups.sh --reset-offsets --from-file FILE "
        "reads: one group,topic,partition,offset line per partition, sorted, no header, fields "
        "quoted as CSV requires. Offsets past the retention are included (restoring them is "
        "the point; a warning counts them). The file is written only when the audit succeeds "
        "(also when it reports findings), through a temporary file renamed over FILE; - writes "
        "the plan to stdout instead of the summary. Only offsets are restored by the tool "
        "(not metadata or leader epochs), clamped into each partition's current log range. "
        "Recipe: find the instant (the commits table shows when the bad reset or expiry "
        "happened); kgtool spark-audit LOGDIR --group '^G$' --until TIME --reset-plan plan.csv; "
        "stop the group's consumers so that it is Empty; kafka-consumer-groups.sh "
        "--bootstrap-server B --group G --reset-offsets --from-file plan.csv --dry-run; then the "
        "same with --execute."
    ),
    "REPORT": (
        "--report FILE writes one HTML page that opens offline: its script, style and data are inside the file, "
        "and its Content-Security-Policy (default-src 'none') lets the browser fetch nothing. It is drawn from the "
        "tables (read back with pyarrow on the driver; without --out the tasks write them to a temporary local "
        "directory, removed afterwards, so a master other than local[...] needs --out) and written only when the "
        "audit succeeds (also when it reports findings), through a temporary file renamed over FILE: a failed "
        "audit leaves an existing FILE as it was. A FILE that cannot be written is a usage error (exit 2) before "
        "Spark starts. The overview lists every group in a table sortable by each column and filtered by rule, "
        "lag status and id: type, state at the instant audited, members, rebalances, storms, findings by rule, "
        "worst lag status and peak lag (with data partition directories among the inputs) and the commits over "
        "the log's time span as a sparkline. Each group with findings or rebalances has a section, most findings "
        "first, drawn when opened: a timeline (generations or group epochs as bands with members and assignor, "
        "rebalances as marks with their cause and who joined, left or was fenced, storms as hatched windows, "
        "findings as lettered diamonds with their sentence on hover), for consumer-protocol groups each member's "
        "reconciliation per epoch (when it reached the epoch, what it held pending revocation) and the "
        "consumption gap, the committed offset per partition over time and the lag in records and in time with "
        "Burrow's status as coloured strips, the generation changes, and the kafka-consumer-groups.sh --describe "
        "tables at the instant audited. Series keep at most 150 buckets per partition (each bucket's minimum, "
        "maximum and last value, so a rewind stays visible), 24 partitions per group, 500 rows per list; what "
        "is left out is counted on the page. Colours are the Okabe-Ito palette, each mark also has a shape or "
        "letter, there are a light and a dark scheme (the system's, or the button), and printing uses the light "
        "one. Times are UTC, written with their offset (+00:00)."
    ),
    "SPARK OUTPUT AND FAILURES": (
        "By default nothing Spark prints reaches the terminal: the driver JVM (started by kgtool "
        "with the log4j2 configuration kgtool/data/spark-log4j2.properties, passed as "
        "-Dlog4j2.configurationFile in spark.driver.extraJavaOptions and, on cluster masters, "
        "spark.executor.extraJavaOptions, appended to any value given with --conf or in "
        "spark-defaults.conf) logs at ERROR into a temporary file that also receives what the "
        "JVM itself prints (\"WARNING: Using incubator modules\") and what the Python workers "
        "write on stderr. kgtool reads it to explain a failure and removes it at exit. "
        "--spark-log-level ERROR, WARN, INFO or DEBUG sends Spark's log at that level, and that "
        "output, to stderr instead (and still into the file); --verbose means WARN, and also prints "
        "kgtool's progress as lines. An "
        "explicit -Dlog4j2.configurationFile in spark.driver.extraJavaOptions is kept (then only "
        "where its output goes is kgtool's choice). Executors log at WARN (INFO or DEBUG if asked) "
        "to the cluster's logs.\n\n"
        "Progress: when stderr is a terminal, one line shows the phase and, while Spark's job runs, "
        "its job and stage and the tasks done/total with a bar (read from Spark's status tracker, "
        "SparkContext.statusTracker()); it is cleared when the audit ends, and Spark's log lines, if "
        "asked for, print above it. When stderr is not a terminal nothing is shown.\n\n"
        "spark-submit kgtool/spark/job.py [OPTIONS] [PATH]... runs this command with the session "
        "spark-submit configured (its --master and --conf apply; --master here is ignored): the same "
        "options, output and exit statuses. Before the SparkContext starts, the running driver JVM's "
        "Log4j is given kgtool's configuration at --spark-log-level (OFF by default), unless "
        "spark.driver.extraJavaOptions names a configuration file of the submitter's; only what "
        "spark-submit prints before the job starts remains (the JVM's incubator-module warning, "
        "Spark's default-profile notice, its hostname warning). kgtool's messages go to "
        "spark-submit's stderr (Spark merges its Python driver's stderr into its stdout; on Linux "
        "kgtool writes to the parent JVM's stderr instead).\n\n"
        "When Spark cannot start, one line gives the cause, from spark-submit's own checks or the "
        "JVM's output, and what to set (exit status 2): --master yarn without HADOOP_CONF_DIR or "
        "YARN_CONF_DIR -> set HADOOP_CONF_DIR to the directory of the cluster's core-site.xml and "
        "yarn-site.xml; a master URL Spark does not know -> its forms; no standalone master "
        "answering -> check the URL; a bad spark.driver.memory -> a JVM size; otherwise the Java "
        "exception with its first cause.\n\n"
        "When Spark fails, one line says why, with the setting to change as --conf KEY=VALUE "
        "(doubling its current value), and the exit status is 4: the driver JVM out of memory "
        "(java.lang.OutOfMemoryError, including the JVM exiting with status 52) -> "
        "spark.driver.memory, which in local mode also runs the tasks; an executor out of heap -> "
        "spark.executor.memory; an executor killed for exceeding its container's memory -> "
        "spark.executor.memoryOverhead; an executor lost otherwise -> spark.task.maxFailures; a "
        "Python worker's MemoryError -> spark.executor.pyspark.memory (when set; else "
        "spark.executor.memoryOverhead, or fewer local tasks); a Python worker killed or crashed "
        "-> spark.executor.memoryOverhead (local mode: fewer tasks at once, --master local[1]); a "
        "task failing past spark.task.maxFailures -> that setting; results over "
        "spark.driver.maxResultSize -> that setting; the driver JVM killed (SIGKILL, the kernel's "
        "out-of-memory killer) -> lower spark.driver.memory or fewer tasks. A kgtool error raised "
        "inside a Spark task (an input error naming a file and byte...) is reported as itself, with "
        "its own exit status. Any other failure is an internal error (exit 3) described in one "
        "line; the temporary file with Spark's output is then kept and named."
    ),
    "EXAMPLES": (
        "kgtool spark-audit\n"
        "kgtool spark-audit /var/lib/kafka/data --out audit/ --group '^orders-'\n"
        "kgtool spark-audit __consumer_offsets-12 --since 2024-06-01T00:00:00Z --format json\n"
        "kgtool spark-audit /var/lib/kafka/data --group '^orders-app$' --until 2024-06-01T14:03:00Z "
        "--reset-plan plan.csv\n"
        "kgtool spark-audit /var/lib/kafka/data --group '^orders-app$' --storm 3/5m\n"
        "kgtool spark-audit /var/lib/kafka/data --report audit.html\n"
        "kgtool spark-audit hdfs://nn/backups/kafka/ --master yarn --conf spark.executor.memory=4g "
        "--out hdfs://nn/audit/run1\n"
        "kgtool spark-audit big-log/ --conf spark.driver.memory=4g --verbose\n"
        "spark-submit kgtool/spark/job.py s3a://bucket/kafka-logs/ --out s3a://bucket/audit/ --group '^orders-'"
    ),
    "FILES": (
        "kgtool/data/sample_offsets/__consumer_offsets-{7,23}/00000000000000000000.log: the "
        "sample audited when no PATH is given (every rule and its look-alike, rebalance-storm "
        "included: clicks-app, with clicks-static as its look-alike)."
    ),
    "NOTES": (
        "Compaction removes history: the coverage table gives each partition's offset and "
        "time range, how many offsets are absent, and its cleaned range (compacted_below_offset, "
        "compacted_below_time, compaction_source: from the broker log directory's "
        "cleaner-offset-checkpoint, else from the log's own signs). Below it only the latest record "
        "of each key survives: the history rules do not judge evidence there, --until inside it "
        "marks the state rows exact = false with a warning (and the lag rows before that instant), "
        "and --reset-plan there is refused "
        "(exit 2). "
        "s3a:// is listed and read with pyarrow's S3 client configured from the Hadoop "
        "settings fs.s3a.endpoint, fs.s3a.access.key, fs.s3a.secret.key, fs.s3a.session.token, "
        "fs.s3a.endpoint.region and fs.s3a.connection.ssl.enabled (--conf "
        "spark.hadoop.fs.s3a.endpoint=...), else from the AWS environment; other remote paths "
        "(hdfs://, ...) are listed through the JVM's Hadoop FileSystem and read by executors "
        "through pyarrow.fs (hdfs:// needs libhdfs on the executors). kgtool must be "
        "installed on the executors. Java 17 or newer is required and checked first. "
        "KIP-848 consumer-group records are replayed when the decoder knows them. A record "
        "type Kafka does not define is skipped, as Kafka's loader skips it, and a tagged field a "
        "schema does not know is kept raw, as Kafka's readers keep it: both are counted in the "
        "coverage (unknown_record_types, unknown_tagged_fields) and shown under the coverage "
        "table, never an error. A group record that does not decode (or whose value version "
        "Kafka does not know: Kafka's loader fails on both) is a decode problem naming the file, "
        "the byte and the field; the record is skipped and its group's incomplete column in the "
        "groups table says why."
    ),
}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h|d|w)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]i?b?|b)?\s*$", re.I)


def parse_duration_ms(text: str, option: str) -> int:
    m = _DURATION.match(text)
    if not m:
        raise UsageError(f"{option}: expected a duration such as 7d, 168h, 10080m or 604800000ms, got {text!r}")
    return int(float(m.group(1)) * _UNIT_MS[m.group(2) or "ms"])


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS = timedelta(milliseconds=1)


def parse_time_ms(text: str, option: str) -> int:
    """ISO-8601 (naive: UTC) or epoch milliseconds -> epoch milliseconds (int64)."""
    from kgtool.documents import quote

    t = text.strip()
    if re.fullmatch(r"[+-]?[0-9]+", t):
        ms = int(t) if len(t) <= 20 else 1 << 64
    else:
        try:
            dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(f"{option}: expected ISO-8601 time or epoch milliseconds, got {quote(text)}") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        ms = (dt - _EPOCH) // _MS  # exact: no float rounding of milliseconds
    if not -(1 << 63) <= ms < 1 << 63:
        raise UsageError(f"{option}: {quote(text)} is out of range (epoch milliseconds must fit in 64 bits)")
    return ms


def parse_size(text: str, option: str) -> int:
    m = _SIZE.match(text)
    if not m:
        raise UsageError(f"{option}: expected a size such as 32MiB or 1048576, got {text!r}")
    unit = (m.group(2) or "b").lower()[:1]
    n = int(m.group(1)) * {"b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[unit]
    if n < 1024:
        raise UsageError(f"{option}: at least 1 KiB, got {text!r}")
    return n


_STORM = re.compile(r"^\s*(\d+)\s*/\s*(\S.*)$")


def parse_storm(text: str, option: str = "--storm") -> tuple[int, int]:
    """``N/W`` (e.g. ``5/10m``, ``3/90s``, ``10/1h``) -> (N, W in ms); N at least 2, W above 0."""
    m = _STORM.match(text)
    usage = f"{option}: expected N/WINDOW such as 5/10m, 3/90s or 10/1h (N >= 2 rebalances within WINDOW), got {text!r}"
    if not m:
        raise UsageError(usage)
    try:
        window = parse_duration_ms(m.group(2), option)
    except UsageError:
        raise UsageError(usage) from None
    n = int(m.group(1))
    if n < 2 or window < 1:
        raise UsageError(usage)
    return n, window


def parse_conf(items: list[str]) -> dict[str, str]:
    conf = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"--conf expects KEY=VALUE, got {item!r}")
        conf[k.strip()] = v
    return conf


def command(
    paths: Optional[list[str]] = typer.Argument(
        None,
        metavar="PATH",
        help="Broker log dirs, __consumer_offsets-N dirs or segment files (local, hdfs://, s3a://); data "
        "partition dirs (TOPIC-N) for their partition.metadata (topic names). Default: the sample shipped with kgtool.",
        show_default=False,
    ),
    out: Optional[str] = typer.Option(
        None, "--out", "-o", metavar="DIR",
        help="Write the tables generations, members, commits, findings, coverage, offsets, rebalances, groups, "
        "group_members (and lag, lag_episodes with data partition dirs) under DIR "
        "(Parquet; JSON Lines with --format jsonl), atomically.",
        show_default=False,
    ),
    output_format: OutputFormat = typer.Option(
        OutputFormat.table, "--format",
        help="table: Rich summary (tables in Parquet); json: the summary as JSON; jsonl: findings "
        "as JSON Lines on stdout and tables as JSON Lines under --out.",
        case_sensitive=False,
    ),
    group: Optional[str] = typer.Option(
        None, "--group", "-g", metavar="REGEX",
        help="Only groups whose id matches REGEX (re.search); also shows their generation timelines, and their "
        "state (at the end, or at --until) as kafka-consumer-groups.sh --describe --state --verbose and --members "
        "--verbose print it, COORDINATOR (ID) showing the log partition (the broker is not known offline).",
        show_default=False,
    ),
    since: Optional[str] = typer.Option(
        None, "--since", metavar="TIME", help="Hide rows before TIME (ISO-8601 or epoch ms).", show_default=False
    ),
    until: Optional[str] = typer.Option(
        None, "--until", metavar="TIME", help="Read the log as if it ended at TIME.", show_default=False
    ),
    retention: str = typer.Option(
        "7d", "--retention", metavar="DURATION",
        help="offsets.retention.minutes of the cluster, for the expiring rule (e.g. 7d, 168h, 10080m).",
    ),
    master: str = typer.Option("local[*]", "--master", metavar="URL", help="Spark master."),
    conf: Optional[list[str]] = typer.Option(
        None, "--conf", metavar="KEY=VALUE", help="Spark configuration, repeatable.", show_default=False
    ),
    split_size: str = typer.Option(
        "32MiB", "--split-size", metavar="SIZE",
        help="Bytes read at a time from remote storage (cut at batch boundaries); local segments are memory-mapped.",
    ),
    spark_log_level: Optional[SparkLogLevel] = typer.Option(
        None, "--spark-log-level", metavar="LEVEL", case_sensitive=False,
        help="Spark's log on stderr: OFF (the default: nothing from Spark, its JVM or its Python workers), "
        "ERROR, WARN (the default with --verbose), INFO or DEBUG.",
        show_default=False,
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Print kgtool's progress on stderr as lines, and Spark's log at WARN."
    ),
    reset_plan: Optional[str] = typer.Option(
        None, "--reset-plan", metavar="FILE",
        help="Write the committed offsets of the --group groups (at --until, else at the log's end) as the CSV "
        "that kafka-consumer-groups.sh --reset-offsets --from-file reads (group,topic,partition,offset), "
        "atomically, when the audit succeeds; - for stdout. Needs --group.",
        show_default=False,
    ),
    report: Optional[str] = typer.Option(
        None, "--report", metavar="FILE",
        help="Write FILE.html: one self-contained page (opens offline) picturing every group: an overview "
        "table, and per group with findings or rebalances its timeline, reconciliation, committed offsets, lag "
        "and --describe tables; written atomically when the audit succeeds (also with findings).",
        show_default=False,
    ),
    storm: str = typer.Option(
        "5/10m", "--storm", metavar="N/WINDOW",
        help="rebalance-storm rule: at least N rebalances of a group within WINDOW (e.g. 5/10m, 3/90s, 10/1h).",
    ),
    lag_step: str = typer.Option(
        "1m", "--lag-step", metavar="DURATION",
        help="With data partition dirs among the inputs: the lag table has a row at each commit and every "
        "DURATION from a partition's first commit to the end of the audited span, while the group holds a "
        "committed offset (e.g. 1m, 30s, 5m).",
    ),
    lag_warn: str = typer.Option(
        "5m", "--lag-warn", metavar="DURATION",
        help="lag-growing rule: Burrow's WARN (the lag did not go down over its last 10 commits) lasting longer "
        "than DURATION.",
    ),
) -> None:
    from kgtool.offsets import reset_plan as plans
    from kgtool.offsets.audit import AuditOptions

    if group is not None:
        try:
            re.compile(group)
        except re.error as exc:
            raise UsageError(f"--group: invalid regular expression {group!r}: {exc}") from None
    if reset_plan is not None:
        if group is None:
            raise UsageError("--reset-plan needs --group REGEX: the groups whose offsets the plan restores "
                             "(--group . for every group)")
        if reset_plan == plans.STDOUT and output_format is not OutputFormat.table:
            raise UsageError("--reset-plan -: stdout carries the plan; --format json/jsonl would mix with it")
        plans.check_plan_path(reset_plan)
    if report is not None:
        _check_report(report, out, master)
    storm_count, storm_window_ms = parse_storm(storm)
    since_ms = None if since is None else parse_time_ms(since, "--since")
    until_ms = None if until is None else parse_time_ms(until, "--until")
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        # --since keeps what is stamped at or after it, --until stops at the first record stamped
        # at or after it: nothing would be left to report
        raise UsageError(f"--since {since} is not before --until {until}: no record lies between them")
    options = AuditOptions(
        group_pattern=group,
        since=since_ms,
        until=until_ms,
        retention_ms=parse_duration_ms(retention, "--retention"),
        storm_count=storm_count,
        storm_window_ms=storm_window_ms,
        lag_step_ms=parse_duration_ms(lag_step, "--lag-step"),
        lag_warn_ms=parse_duration_ms(lag_warn, "--lag-warn"),
    )
    split_bytes = parse_size(split_size, "--split-size")
    spark_conf = parse_conf(list(conf or []))
    if not paths:
        from kgtool.data import sample_path

        paths = [str(sample_path("sample_offsets"))]
    fmt = "jsonl" if output_format is OutputFormat.jsonl else "parquet"

    from kgtool.spark import job
    from kgtool.spark.files import TopicIds, cleaner_checkpoints, is_local, resolve_inputs
    from kgtool.spark.session import get_session

    log_level = spark_log_level.value if spark_log_level is not None else ("WARN" if verbose else "OFF")
    local_files = None
    empty: set[int] = set()
    topics = TopicIds()
    if all(is_local(p) for p in paths):
        local_files = resolve_inputs(paths, empty=empty, topics=topics)  # input errors before the JVM starts
        if not local_files and not empty:
            raise InputError(_nothing_to_audit(topics))
    with _AuditProgress(verbose) as show:
        show.say(f"starting Spark ({master}, Spark log level {log_level})")
        try:
            spark = get_session(master, spark_conf, log_level=log_level)
            watch: Any = contextlib.nullcontext()
            if show.watches_spark and spark is not None:
                from kgtool.spark.progress import StageWatcher

                watch = StageWatcher(spark, show.spark)
            with watch:
                files = local_files if local_files is not None else resolve_inputs(paths, spark, empty=empty,
                                                                                   topics=topics)
                _topic_names_found(topics, show.say)
                if topics.names:
                    options = dataclasses.replace(options, topic_names=topics.pairs())
                checkpoints, checkpoint_warnings = cleaner_checkpoints(files, spark)
                for w in checkpoint_warnings:
                    render.warn(w)
                if checkpoints:
                    options = dataclasses.replace(options, cleaner_checkpoints=checkpoints)
                share_dirs = _share_state_dirs(topics)  # not data partitions: the share coordinator's log
                _remote_partitions_named(topics)
                if topics.partitions:
                    options = dataclasses.replace(options, lag_partitions=tuple(
                        (tp, tuple(dirs)) for tp, dirs in sorted(topics.partitions.items())))
                    show.say(f"lag of {render.count(len(topics.partitions))} data partition(s)")
                sink = render.write_json_lines if output_format is OutputFormat.jsonl else None
                pictured: list[Any] = []
                summary = job.run_audit(spark, files, options, out=out, fmt=fmt, split_bytes=split_bytes,
                                        progress=show.say, findings_sink=sink, empty_partitions=tuple(sorted(empty)),
                                        keep_offsets=reset_plan is not None,
                                        read_tables=None if report is None else _report_reader(
                                            pictured, options.until, show.say))
        except KgtoolError:
            raise
        except Exception as exc:  # noqa: BLE001 - Spark's failures become one line (kgtool/spark/failures.py)
            err = _spark_error(exc)
            if err is None:
                raise
            raise err from exc
        show.say("done")
    share, share_issues = _share_states(share_dirs, options.until)
    if share is not None and out is not None:
        _write_share_table(share, out, fmt)
    if output_format is OutputFormat.json:
        out_json = job.summary_json(summary)
        if share is not None:
            out_json["share_partitions"] = share
        render.print_json(out_json)
    elif output_format is OutputFormat.table and reset_plan != plans.STDOUT:
        _render_summary(summary)
        if share is not None:
            _render_share_states(share, options.until)
    for w in summary.compaction_warnings:
        render.warn(w)
    inexact = _cleaned_at(summary, options.until)
    for p in summary.problems:
        where = "" if p["position"] is None else f" byte {p['position']}:"
        render.warn(f"{p['source']}:{where} {p['problem']}")
    if summary.problem_count > len(summary.problems):
        render.warn(f"... and {render.count(summary.problem_count - len(summary.problems))} more decode problems")
    if reset_plan is not None:
        if inexact:
            _refuse_reset_plan(inexact, options.until)
        _write_reset_plan(reset_plan, _reset_plan(summary, group, options.until), summary, options.until)
    if report is not None:
        _write_report(report, pictured[0], summary, paths)
    n = summary.finding_count
    if n or summary.problem_count or share_issues:
        parts = []
        if n:
            parts.append(f"{render.count(n)} finding{'s' if n != 1 else ''}")
        if summary.problem_count:
            parts.append(f"{render.count(summary.problem_count)} decode problem{'s' if summary.problem_count != 1 else ''}")
        if share_issues:
            parts.append(f"{render.count(share_issues)} __share_group_state record{'s' if share_issues != 1 else ''} "
                         "not replayed")
        raise FindingsReported(" and ".join(parts) + " reported")


SHARE_GROUP_STATE = "__share_group_state"
SHARE_ROWS_SHOWN = 40


def _remote_partitions_named(topics: Any) -> None:
    """One warning for the partition directories of other topics found on a remote filesystem:
    they name topic ids (partition.metadata), but lag and the __share_group_state replay read
    local directories only."""
    if not topics.remote:
        return
    share = sorted(p for (t, _), p in topics.remote if t == SHARE_GROUP_STATE)
    data = sorted(p for (t, _), p in topics.remote if t != SHARE_GROUP_STATE)
    if share:
        render.warn(f"{len(share)} remote __share_group_state-N director{'ies' if len(share) != 1 else 'y'} "
                    f"({share[0]}{', ...' if len(share) > 1 else ''}) not replayed: the share partitions are "
                    "read from local directories only (copy them to a local directory)")
    if data:
        render.warn(f"{len(data)} remote data partition director{'ies' if len(data) != 1 else 'y'} "
                    f"({data[0]}{', ...' if len(data) > 1 else ''}): used for topic names only; lag reads "
                    "local partition directories (copy them to a local directory)")


def _share_state_dirs(topics: Any) -> dict[int, list[str]]:
    """The ``__share_group_state-N`` directories among the inputs, by partition (taken out of the
    data partitions: no group commits offsets of the share coordinator's topic)."""
    found = {}
    for (topic, part), dirs in list(topics.partitions.items()):
        if topic == SHARE_GROUP_STATE:
            found[part] = list(dirs)
            del topics.partitions[(topic, part)]
    return found


def _share_states(dirs: dict[int, list[str]], until: int | None) -> tuple[list[dict[str, Any]] | None, int]:
    """Each share partition's state at the end (or ``--until``) from the ``__share_group_state``
    partitions given (``ShareCoordinatorShard.replay``, :mod:`kgtool.offsets.share_state`): one
    row per share partition, with the problems and refused records of each log partition as
    warnings (their count is returned beside the rows). None when no such directory was given."""
    if not dirs:
        return None, 0
    import glob
    import os

    from kgtool.offsets.share_state import replay_files, rows

    out: list[dict[str, Any]] = []
    issues = 0
    for part, copies in sorted(dirs.items()):
        # the longest copy of the partition (several brokers' log directories)
        best = max(copies, key=lambda d: sum(os.path.getsize(f) for f in glob.glob(os.path.join(d, "*.log"))))
        segments = sorted(glob.glob(os.path.join(best, "*.log")))
        rp = replay_files(segments, until)
        for offset, why in rp.problems:
            render.warn(f"{best}: offset {offset}: {why}")
        for offset, why in rp.failures:
            render.warn(f"{best}: offset {offset}: {why} (Kafka's share coordinator does not load past it)")
        issues += len(rp.problems) + len(rp.failures)
        out.extend(rows(rp, part))
    return out, issues


def _write_share_table(share: list[dict[str, Any]], out: str, fmt: str) -> None:
    """The share partitions as a ``share_partitions`` table beside the audit's (one file per
    ``__share_group_state`` partition, written atomically), on a local ``--out``; a remote one
    gets a warning (the rows are in ``--format json``)."""
    from kgtool.offsets.share_state import SHARE_PARTITIONS
    from kgtool.offsets.tables import arrow_schema
    from kgtool.spark import output
    from kgtool.spark.files import is_local

    if not is_local(out):
        render.warn(f"--out {out}: the share_partitions table is written on a local --out only "
                    "(--format json carries its rows)")
        return
    schema = arrow_schema(SHARE_PARTITIONS)
    for part in sorted({r["log_partition"] for r in share}):
        w = output.TableWriter(out, "share_partitions", part, schema, fmt)
        w.write([r for r in share if r["log_partition"] == part])
        w.close()


def _render_share_states(share: list[dict[str, Any]], until: int | None) -> None:
    """The share partitions as ``kafka-share-groups.sh --describe --offsets --verbose`` shows
    their start (GROUP, TOPIC, PARTITION, LEADER-EPOCH, START-OFFSET), with the state epoch and
    the in-flight state batches of ``__share_group_state``."""
    at = f"at {render.iso_ms(until)}" if until is not None else "at the end of the log"
    if not share:
        render.out().print(f"share partitions {at}: none")
        return
    shown = share[:SHARE_ROWS_SHOWN]
    render.out().print(render.table(
        ["GROUP", "TOPIC-ID", ("PARTITION", "right"), ("LEADER-EPOCH", "right"), ("START-OFFSET", "right"),
         ("STATE-EPOCH", "right"), ("BATCHES", "right"), "LAST WRITTEN (UTC)"],
        [[render.display_text(r["group_id"]), r["topic_id"], str(r["partition"]), str(r["leader_epoch"]),
          str(r["start_offset"]), str(r["state_epoch"]), str(len(r["state_batches"])),
          render.iso_ms(r["timestamp"]) if r["timestamp"] is not None else "-"] for r in shown],
        title=f"share partitions {at} (__share_group_state, kafka-share-groups.sh --describe --offsets --verbose)"
              + (f": the first {len(shown):,} of {len(share):,} (--format json: all)" if len(share) > len(shown) else "")))


REPORT_OPTION = "--report"


def _check_report(path: str, out: str | None, master: str) -> None:
    """Before Spark starts: the report can be written, and its tables can be read back."""
    from kgtool.outfile import check_writable

    if path == "-":
        raise UsageError("--report: the report is an HTML file; give its path (stdout carries the summary)")
    if out is None and not master.startswith("local"):
        raise UsageError(f"--report with --master {master} needs --out DIR: the report is drawn from the tables, "
                         "which the tasks write where the driver reads them only on a local master")
    check_writable(path, REPORT_OPTION)


def _report_reader(into: list[Any], until: int | None, say: Any) -> Any:
    """The hook that reads the audit's tables into the report's model, once they are written."""

    def read(root: str, fmt: str, storage: dict[str, str]) -> None:
        from kgtool.report.data import gather

        say("reading the tables for the report")
        into.append(gather(root, fmt, storage, until=until))

    return read


def _write_report(path: str, data: Any, summary: Any, paths: list[str]) -> None:
    from kgtool import __version__
    from kgtool.outfile import write_atomic
    from kgtool.report.page import render_html

    n = render.count
    at = summary.options.get("until")
    facts = [
        f"{n(summary.files)} segment file(s), {n(summary.bytes)} bytes of __consumer_offsets: "
        + ", ".join(render.display_text(p) for p in paths[:5]) + (f" and {n(len(paths) - 5)} more" if len(paths) > 5 else ""),
        f"{n(len(data.overview))} group(s), {n(summary.finding_count)} finding(s), "
        f"{n(summary.rebalances.get('count', 0))} rebalance(s); state "
        + (f"at --until {render.iso_ms(at)}" if at is not None else "at the end of the log read")
        + (f"; group filter {summary.options['group']!r}" if summary.options.get("group") else ""),
        f"kgtool {__version__} spark-audit --report",
    ]
    page = render_html(data, title="kgtool spark-audit report", facts=facts, meanings=RULE_MEANINGS)
    write_atomic(path, page.encode("utf-8"), REPORT_OPTION)
    render.info(f"spark-audit: report of {n(len(data.overview))} group(s) ({n(len(data.sections))} with findings or "
                f"rebalances) written to {path} ({n(len(page.encode('utf-8')))} bytes)")


def _nothing_to_audit(topics: Any) -> str:
    if topics.directories:
        return (f"no __consumer_offsets segment files to audit (the {render.count(topics.directories)} partition "
                "director(y/ies) of other topics given are read for topic names only)")
    return "no segment files to audit"


def _topic_names_found(topics: Any, say: Any) -> None:
    """The partition.metadata files read: their problems as warnings (the ids stay ids); the
    copies of __consumer_offsets partitions not read (several brokers' log dirs) as notes."""
    for p in topics.problems:
        render.warn(f"{p}: its topic's id is shown as the id")
    for line in topics.copies:
        render.info(f"note: {line}")
    if topics.directories:
        say(f"{render.count(len(topics.names))} topic name(s) from the partition.metadata files of "
            f"{render.count(topics.directories)} data partition director(y/ies)")


def _reset_plan(summary: Any, group: str, until: int | None) -> str:
    """The plan's text; an input error when the selected groups have no committed offset."""
    from kgtool.offsets.reset_plan import plan_text

    text = plan_text(summary.offsets)
    if not text:
        at = f" at {render.iso_ms(until)}" if until is not None else ""
        raise InputError(f"--reset-plan: no committed offsets for the groups matching {group!r}{at}: nothing written")
    return text


def _compaction_sentence(row: dict[str, Any]) -> str | None:
    """Once per compacted partition: below which offset and time only the latest record of each
    key survives, from what, and what that means for the answers (kgtool.offsets.compaction)."""
    below = row.get("compacted_below_offset")
    if below is None:
        return None
    when = row.get("compacted_below_time")
    at = f" ({render.iso_ms(when)})" if when is not None else " (the log's end)"
    how = ("the broker's cleaner-offset-checkpoint says" if row.get("compaction_source") == "checkpoint"
           else "the log itself shows (offsets removed, cleaned batches)")
    return (f"__consumer_offsets-{row['log_partition']} is compacted below offset {below:,}{at}, as {how}: below "
            "it only the latest record of each key survives, so its history (generations, rebalances, storms, "
            "superseded and aborted commits) is not all there and the rules do not judge it; the state at an "
            "instant before it is unknown (--until there: exact = false). The state at the end is exact.")


def _cleaned_at(summary: Any, until: int | None) -> list[dict[str, Any]]:
    """The coverage rows of the partitions whose cleaned range (kgtool.offsets.compaction)
    holds ``until``: one warning each, naming the partition, its cleaned offset and time and the
    earliest exact instant (their groups, group_members and offsets rows are exact = false)."""
    if until is None:
        return []
    out = []
    for r in summary.coverage:
        below, time = r.get("compacted_below_offset"), r.get("compacted_below_time")
        if below is None or (time is not None and until >= time):
            continue
        out.append(r)
        earliest = f"the earliest exact instant is {render.iso_ms(time)}" if time is not None else \
            "no instant before the log's end is exact"
        render.warn(f"__consumer_offsets-{r['log_partition']}: --until {render.iso_ms(until)} is inside its cleaned "
                    f"range (compacted below offset {below:,}, source: {r.get('compaction_source')}): records "
                    "the coordinator held then are gone, so its groups, group_members and offsets rows are what "
                    f"the log still holds (exact = false), not that state; {earliest}")
    return out


def _refuse_reset_plan(rows: list[dict[str, Any]], until: int | None) -> None:
    """--reset-plan inside a cleaned range: refused (a plan must never be partial)."""
    parts = ", ".join(f"__consumer_offsets-{r['log_partition']}" for r in rows)
    times = [r["compacted_below_time"] for r in rows]
    earliest = ("the earliest instant exact in all of them is "
                f"{render.iso_ms(max(times))}") if all(t is not None for t in times) else \
        "some are cleaned to their end: plan at the end of the log (no --until)"
    raise InputError(f"--reset-plan at --until {render.iso_ms(until)}: refused: {parts} "
                     f"{'is' if len(rows) == 1 else 'are'} compacted past that instant, so the offsets then are "
                     f"not all in the log; {earliest} (or audit only the group's own partition: kgtool "
                     "coordinator-of)")


def _write_reset_plan(path: str, text: str, summary: Any, until: int | None) -> None:
    from kgtool.offsets.reset_plan import STDOUT, write_plan

    rows = summary.offsets
    expired = sum(1 for r in rows if r[4])
    at = f"at {render.iso_ms(until)}" if until is not None else "at the end of the log"
    if path == STDOUT:
        render.write_raw(text)
    else:
        write_plan(path, text)
    render.info(f"spark-audit: reset plan: {render.count(len(rows))} committed offset(s) of "
                f"{render.count(len({r[0] for r in rows}))} group(s) "
                f"{at} written to {'stdout' if path == STDOUT else path}")
    if expired:
        render.warn(f"reset plan: {render.count(expired)} of its offsets were past the retention {at} (kept: they are what "
                    "was committed then; the coordinator would have deleted them)")
    if summary.problem_count:
        render.warn(f"reset plan: {render.count(summary.problem_count)} decode problem(s): commits in damaged stretches of the "
                    "log are missing from it")


def _spark_error(exc: Exception) -> Exception | None:
    """The error to raise instead of a failed Spark job's exception (None: re-raise it): the
    kgtool error explaining it, else, for a Spark exception, one line of it as an internal
    error, with the kept file of Spark's output named."""
    from kgtool.spark import failures, session

    err = failures.explain(exc)
    if err is not None:
        return err
    if not failures.is_spark_exception(exc):
        return None
    kept = session.launched.keep() if session.launched is not None else None
    return failures.SparkJobError(failures.summary(exc) + (f" (Spark's output: {kept})" if kept else ""))


class _AuditProgress:
    """kgtool's progress on stderr while the audit runs. On a terminal: one Rich line (the
    phase; while Spark's job runs, its tasks done/total with a bar, from Spark's status
    tracker), cleared at the end. With --verbose: lines with the elapsed time. Else nothing,
    and no status thread."""

    def __init__(self, verbose: bool = False) -> None:
        self.verbose = verbose
        self._bar: Any = None
        self._task: Any = None
        self._start = time.monotonic()
        self._last_line: tuple[Any, ...] = ()
        self._last_time = 0.0

    @property
    def watches_spark(self) -> bool:
        return self.verbose or self._bar is not None

    def __enter__(self) -> _AuditProgress:
        self._start = time.monotonic()
        console = render.err()
        if not self.verbose and console.is_terminal:
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._bar = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=20),
                TextColumn("{task.fields[tasks]}"), TimeElapsedColumn(),
                console=console, transient=True, redirect_stdout=False,
            )
            self._bar.start()
            self._task = self._bar.add_task("spark-audit", total=None, tasks="")
            from kgtool.spark import session

            session.echo_to(self._echo)  # Spark's log (--spark-log-level) above the line, not through it
        return self

    def _echo(self, data: bytes) -> None:
        from rich.text import Text

        self._bar.console.print(Text(data.decode("utf-8", "replace").rstrip("\n")))

    def say(self, msg: str) -> None:
        if self.verbose:
            render.info(f"spark-audit [{time.monotonic() - self._start:7.1f}s] {msg}")
        elif self._bar is not None:
            self._bar.update(self._task, description=f"spark-audit: {msg}", total=None, completed=0, tasks="")

    def spark(self, p: Any) -> None:
        """A change seen by :class:`kgtool.spark.progress.StageWatcher`."""
        if not p.stages:
            return
        n = render.count
        job = p.jobs_done + 1
        stage = ", ".join(str(s.stage_id) for s in p.stages if s.completed < s.tasks) or str(p.stages[-1].stage_id)
        detail = f"{n(p.completed)}/{n(p.tasks)} tasks" + (f", {n(p.active)} running" if p.active else "") \
            + (f", {n(p.failed)} failed" if p.failed else "")
        if self._bar is not None:
            self._bar.update(self._task, description=f"spark-audit: Spark job {job}, stage {stage}",
                             total=max(p.tasks, 1), completed=p.completed, tasks=detail)
        elif self.verbose:
            key = (job, p.completed, p.tasks, p.failed)
            now = time.monotonic()
            if key != self._last_line and (now - self._last_time >= 2 or p.completed == p.tasks):
                self._last_line, self._last_time = key, now
                self.say(f"Spark job {job}, stage {stage}: {detail}")

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            from kgtool.spark import session

            session.echo_to(None)
            self._bar.stop()  # transient: the line is cleared


def _render_summary(s: Any) -> None:
    c = render.out()
    n = render.count
    until = s.options.get("until")
    c.print(
        f"[bold]spark-audit[/bold]: {n(s.files)} segment file(s), {n(s.bytes)} bytes, {n(s.splits)} task(s) "
        f"(one per partition); {n(s.groups)} group(s), {n(s.counts['generations'])} generation record(s), "
        f"{n(s.counts['members'])} member row(s), {n(s.counts['commits'])} commit record(s), "
        f"{n(s.counts.get('offsets', 0))} committed offset(s)"
        + (f" at {render.iso_ms(until)}" if until is not None else "")
        + (f"; tables written to {render.display_text(s.out)}" if s.out else "")
    )
    # The problems column only when some partition has problems (they are also warned about
    # and set the exit status): at 80 columns every column counts.
    problems = any(r["problems"] for r in s.coverage)
    coverage = render.table(
        [("part.", "right"), ("records", "right"), "offsets", "first / last (UTC)", ("groups", "right")]
        + ([("problems", "right")] if problems else []),
        [
            [str(r["log_partition"]), n(r["records"]),
             "-" if r["first_offset"] is None else
             f"{r['first_offset']}..{r['last_offset']}\n{n(r['offsets_absent'])} absent",
             f"{render.iso_ms(r['first_timestamp'])}\n{render.iso_ms(r['last_timestamp'])}",
             n(r["groups"])] + ([n(r["problems"])] if problems else [])
            for r in s.coverage
        ],
        title="coverage (what the log still holds)",
    )
    _fold(coverage, *range(len(coverage.columns)))  # a number is never cut short
    _keep_whole(coverage, 3)
    c.print(coverage)
    for r in s.coverage:
        line = _compaction_sentence(r)
        if line is not None:
            c.print(render.escape(line), style="yellow")
    _render_unknown(c, s.coverage)
    by_rule = s.findings_by_rule
    if by_rule:
        width = _bar_width(c)
        unit = render.bar_unit(max(by_rule.values()), width)
        c.print(render.table(
            ["rule", ("findings", "right"), f"█ = {n(unit)}", "meaning"],
            [[r, n(by_rule[r]), f"[red]{render.bar(by_rule[r], unit * width, width)}[/red]", RULE_MEANINGS[r]]
             for r in RULE_MEANINGS if r in by_rule],
            title="findings by rule",
        ))
    if s.worst_groups:
        worst = render.table(
            ["group", ("findings", "right"), "rules"],
            [[render.display_text(w["group"]), n(w["total"]),
              "\n".join(f"{r} {n(w[r])}" for r in RULE_MEANINGS if w.get(r))] for w in s.worst_groups],
            title="worst groups",
        )
        _fold(worst, 0)
        c.print(worst)
    _render_rebalances(s)
    if s.lag:
        _render_lag(c, s.lag, s.options.get("group") is not None)
    if s.findings:
        title = "findings" + (f" (first {n(len(s.findings))} of {n(s.finding_count)})"
                              if s.finding_count > len(s.findings) else "")
        c.print(f"[bold]{title}[/bold]")
        for f in s.findings:
            _render_finding(c, f)
    else:
        c.print("[green]no findings[/green]")
    if s.describe:
        from kgtool.cli.describe import print_views

        print_views(s.describe, until, total=s.describe_total)


def _render_lag(c: Any, lag: dict[str, Any], described: bool) -> None:
    """Lag at the end (or --until): the data partitions read (the copy, the others behind, what
    their files said), the groups by worst status and peak lag, and with --group the
    kafka-consumer-groups.sh --describe table with LAG-MS, STATUS and a sparkline of the lag."""
    n = render.count
    for p in lag["partitions"]:
        tp = f"{p['topic']}-{p['partition']}"
        behind = "; ".join(f"{render.display_text(d)} {n(k)} offset(s) behind" for d, k in p["behind"])
        c.print(f"lag of {render.display_text(tp)}: read from {render.display_text(p['copy'])} (log end offset "
                f"{p['log_end_offset']})" + (f"; {behind}" if behind else ""))
        for line in p["notes"]:  # not damage (its problems are the summary's: warned about with the others)
            render.info(f"note: {tp}: {line}")
    if lag.get("without_data"):
        c.print(f"{n(lag['without_data'])} committed partition(s) have no data partition directory among the "
                "inputs: their lag columns are null")
    if lag["groups"]:
        c.print(render.table(
            ["group", "worst", ("peak lag", "right"), ("peak lag ms", "right"), "at the end"],
            [[render.display_text(g["group"]), g["worst"], n(g["peak_lag"]), n(g["peak_lag_ms"]), g["status"]]
             for g in lag["groups"][:20]],
            title="lag (Burrow's statuses): groups by worst status, then peak lag; status at "
            + render.iso_ms(lag["at"]),
        ))
    if described and lag["describe"]:
        cols = ["GROUP", "TOPIC", ("PARTITION", "right"), ("CURRENT-OFFSET", "right"), ("LOG-END-OFFSET", "right"),
                ("LAG", "right"), ("LAG-MS", "right"), "STATUS", "CONSUMER-ID", "HOST", "CLIENT-ID", "LAG OVER TIME"]
        rows = []
        for o in lag["describe"]:
            line = lag["sparklines"].get(f"{o['group']}|{o['topic']}-{o['partition']}", "")
            rows.append([render.display_text(o["group"]), render.display_text(o["topic"]), str(o["partition"]),
                         str(o["offset"]), render.MISSING if o["log_end_offset"] is None else str(o["log_end_offset"]),
                         render.MISSING if o["lag"] is None else str(o["lag"]),
                         render.MISSING if o["lag_ms"] is None else str(o["lag_ms"]),
                         o["lag_status"] or render.MISSING, o["consumer_id"] or render.MISSING,
                         o["host"] or render.MISSING, o["client_id"] or render.MISSING, line])
        c.print(render.table(cols, rows, title="lag (kafka-consumer-groups.sh --describe) at " + render.iso_ms(lag["at"])))


def _render_unknown(c: Any, coverage: list[dict[str, Any]]) -> None:
    """What the schemas did not know, when anything: counted and shown, never an error (Kafka's
    loader skips unknown record types, its generated readers keep unknown tagged fields)."""
    n = render.count
    types = sum(r.get("unknown_record_types") or 0 for r in coverage)
    tags = sum(r.get("unknown_tagged_fields") or 0 for r in coverage)
    parts = []
    if types:
        parts.append(f"{n(types)} record(s) of a type Kafka does not define (skipped, as its loader skips them)")
    if tags:
        parts.append(f"{n(tags)} tagged field(s) the record schemas do not know (kept raw, as Kafka keeps them)")
    if parts:
        c.print("not an error: " + "; ".join(parts))


def _render_finding(c: Any, f: dict[str, Any]) -> None:
    """One finding: its time, rule, group and what was committed; the message; where in the log
    (the segment's path shortened from the left to fit the line)."""
    gen = "" if f["generation_id"] is None else f" gen {f['generation_id']}"
    what = ""
    if f["topic"] is not None:  # else a group-level finding (rebalance-storm)
        prev = "" if f["previous_offset"] is None else f" (previous {f['previous_offset']})"
        at = "" if f["offset"] is None else f" offset {f['offset']}"  # a lag finding names a partition only
        what = f" {render.display_text(f['topic'] + '-' + str(f['partition']))}{at}{prev}"
    _hanging(c, f"{render.iso_ms(f['timestamp'])} [red]{f['rule']}[/red] {render.display_text(f['group'])}{what}{gen}")
    _indented(c, f["message"])
    if f["record_offset"] is None:  # a lag finding: the data partition read, no record of the offsets log
        if f["source"] is not None:
            _indented(c, f"data at {render.path_tail(f['source'], c.width - _INDENT - len('data at '))}")
        return
    partition = f"__consumer_offsets-{f['log_partition']}"
    where = f": offset {f['record_offset']}, byte {f['position']}"
    source = render.path_tail(f["source"], c.width - _INDENT - len("at ") - len(where))
    if partition not in source:
        where = f" ({partition}){where}"
    _indented(c, f"at {source}{where}")


_INDENT = 4


def _hanging(c: Any, markup: str) -> None:
    """A line of markup wrapped with a hanging indent: only an entry's first line starts at
    column 0, so that entries stand out."""
    from rich.text import Text

    lines = Text.from_markup(markup).wrap(c, max(20, c.width - _INDENT))
    lines[0].rstrip()
    c.print(lines[0])
    _print_indented(c, lines[1:])


def _indented(c: Any, text: str) -> None:
    """Plain text (a message), dim, wrapped at the console's width and indented."""
    from rich.text import Text

    _print_indented(c, Text(text, style="dim").wrap(c, max(20, c.width - _INDENT)))


def _print_indented(c: Any, lines: Any) -> None:
    from rich.text import Text

    for line in lines:
        line.rstrip()
        c.print(Text(" " * _INDENT) + line)


def _keep_whole(table: Any, *columns: int) -> None:
    """Cells of these columns are never folded mid-word (times, offset ranges): the other
    columns give up the width."""
    for i in columns:
        table.columns[i].no_wrap = True


def _fold(table: Any, *columns: int) -> None:
    """Ids too wide for their column continue on the next line instead of ending in an ellipsis:
    nothing of a group id or client is hidden."""
    for i in columns:
        table.columns[i].overflow = "fold"


def _bar_width(console: Any) -> int:
    """Blocks of a bar: 20 on a wide console, 10 at 80 columns."""
    return 20 if console.width >= 120 else 10


def _window(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _render_rebalances(s: Any) -> None:
    """The rebalances panel: counts, storms, the groups with the most rebalances; with --group,
    each group's generation timeline."""
    rb = s.rebalances
    if not rb:
        return
    c = render.out()
    n = render.count
    rule = f"{s.options.get('storm_count', 5)} within {_window(s.options.get('storm_window_ms', 600_000))}"
    c.print(f"[bold]rebalances[/bold]: {n(rb['count'])} generation change(s) with a rebalance, "
            f"{n(rb['no_rebalance'])} without (same generation); {n(rb['storm_count'])} storm(s) (rule: {rule})")
    if rb["storms"]:
        storms = render.table(
            ["group, generations", "window (UTC)", ("rebalances", "right"), "churned most, diagnosis"],
            [[render.display_text(st["group"]) + "\n"
              + f"{'-' if st['from_generation'] is None else st['from_generation']} -> {st['to_generation']}",
              f"{render.iso_ms(st['start'])}\n{render.iso_ms(st['end'])}",
              n(st["count"]),
              "\n".join([render.display_text(f"{_client(x['client_id'], x['client_host'])} ({n(x['count'])})")
                         for x in st["churn"]] + [d["code"] for d in st["diagnosis"]])]
             for st in rb["storms"]],
            title="rebalance storms" + (f" (largest {n(len(rb['storms']))} of {n(rb['storm_count'])})"
                                         if rb["storm_count"] > len(rb["storms"]) else ""),
        )
        _keep_whole(storms, 1)
        _fold(storms, 0, 3)
        c.print(storms)
    if rb["worst_groups"]:
        width = _bar_width(c)
        unit = render.bar_unit(max(g["rebalances"] for g in rb["worst_groups"]), width)
        per_group = render.table(
            ["group", ("rebalances", "right"), f"█ = {n(unit)}", "causes"],
            [[render.display_text(g["group"]), n(g["rebalances"]),
              f"[yellow]{render.bar(g['rebalances'], unit * width, width)}[/yellow]",
              "\n".join([f"{k} {n(v)}" for k, v in list(g["causes"].items())[:4]]
                        + ([f"same generation {n(g['no_rebalance'])}"] if g["no_rebalance"] else [])
                        + ([f"storms {n(g['storms'])}"] if g["storms"] else []))]
             for g in rb["worst_groups"]],
            title="rebalances per group (most first)",
        )
        _fold(per_group, 0, 3)
        c.print(per_group)
    for group, lines in s.timeline.items():
        # One entry per change, as the findings: a table of eight columns cannot be read at 80.
        c.print(f"[bold]generation timeline of {render.display_text(group)}[/bold] (UTC)")
        for x in lines:
            gen = (f"{'-' if x['from_generation'] is None else x['from_generation']} -> {x['to_generation']}"
                   if x["rebalance"] else f"{x['to_generation']} (same)")
            changed = _changed(x)
            moved = ", ".join(f"{label} {n(x[k])}" for k, label in
                              (("partitions_moved", "moved"), ("partitions_revoked", "revoked")) if x[k] is not None)
            _hanging(c, f"{render.iso_ms(x['timestamp'])} gen {gen}, members {x['members_before']} -> "
                        f"{x['members_after']}{'' if changed == '-' else ' (' + changed + ')'}"
                        f"{', ' + moved if moved else ''}: [bold]{x['cause']}[/bold]")
            _indented(c, x["message"])


def _client(client_id: str | None, host: str | None) -> str:
    from kgtool.offsets.rebalances import client_name

    return client_name(client_id, host)


def _changed(x: dict[str, Any]) -> str:
    parts = [f"{label} {len(x[k])}" for k, label in
             (("joined", "+joined"), ("left", "-left"), ("rejoined", "rejoined"), ("static_replaced", "static"))
             if x[k]]
    return ", ".join(parts) or "-"
