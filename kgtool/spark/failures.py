"""Spark's failures as one kgtool line: :func:`explain`.

When a Spark job fails, PySpark raises a ``PythonException``, a ``Py4JJavaError`` whose text is
a Java stack trace (with a Python traceback inside when a task's Python code raised), or, when
the driver JVM died, a ``Py4JNetworkError``/``ConnectionRefusedError``. :func:`explain` turns
that into what the user needs:

- a :class:`~kgtool.errors.KgtoolError` raised by kgtool code inside a Python task (an
  ``InputError`` naming a file and byte...): the same error, rebuilt from the traceback's last
  line (``kgtool.errors.InputError: seg.log: byte 4213: ...``), with its own exit code;
- a resource failure: a :class:`~kgtool.errors.SparkFailure` (exit 4) naming the cause and the
  ``--conf KEY=VALUE`` to change: Java heap exhausted in the driver (``spark.driver.memory``;
  in local mode the driver also runs the tasks) or in an executor (``spark.executor.memory``),
  an executor killed for exceeding its container's memory (``spark.executor.memoryOverhead``) or
  lost otherwise (``spark.task.maxFailures``), a Python worker out of memory (``MemoryError``:
  ``spark.executor.pyspark.memory``) or killed/crashed, a task failing past
  ``spark.task.maxFailures``, results over ``spark.driver.maxResultSize``, the driver JVM gone
  (its exit status: 52 is Spark's out-of-memory exit, -9 a SIGKILL, as the kernel's OOM killer
  sends);
- anything else (a bug: a ``KeyError`` in a task...): None; :func:`summary` gives one line for it.

The JVM's exit status, the current settings and the driver's captured output come from
:mod:`kgtool.spark.session` when kgtool started the JVM (:func:`observe`), or are passed as a
:class:`SparkState` (tests; a caller that knows better).

Use (``kgtool spark-audit``; ``spark-submit kgtool/spark/job.py`` the same way)::

    try:
        summary = run_audit(...)
    except Exception as exc:
        err = explain(exc)
        if err is None:
            raise
        raise err from exc
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from kgtool.errors import DecodeError, KgtoolError, SparkFailure

#: Spark's defaults for the settings the messages name.
SPARK_DEFAULTS = {
    "spark.driver.memory": "1g",
    "spark.executor.memory": "1g",
    "spark.driver.maxResultSize": "1g",
    "spark.task.maxFailures": "4",
}
#: ``SparkExitCode.OOM``: what a Spark JVM exits with after an OutOfMemoryError.
SPARK_EXIT_OOM = 52

_TRACEBACK = "Traceback (most recent call last):"
_EXC_LINE = re.compile(r"^(?P<cls>[A-Za-z_][\w.]*)(?::(?: (?P<msg>.*))?)?$")
_TASK_FAILURE = re.compile(
    r"Task (?P<task>\S+) in stage (?P<stage>\S+) failed (?P<times>\d+) times?, most recent failure: "
    r"Lost task \S+ in stage \S+ \(TID \d+\) \((?P<host>[^()\s]*) executor (?P<executor>[^)]+)\): (?P<cause>[^\n]*)"
)
_JAVA_OOM = re.compile(r"java\.lang\.OutOfMemoryError(?::[ \t]*(?P<detail>[^\n\r]*))?")
_SPARK_OOM = re.compile(r"SparkOutOfMemoryError|\[UNABLE_TO_ACQUIRE_MEMORY[^\]]*\][^\n]*|Unable to acquire \d+ bytes of memory[^\n]*")
_EXECUTOR_LOST = re.compile(r"ExecutorLostFailure \(executor (?P<executor>[^ )]+)[^)]*\)(?: Reason: (?P<reason>[^\n]*))?")
_PYTHON_WORKER_DIED = re.compile(r"Python worker exited unexpectedly|Python worker (?:died|crashed)")
# What a worker says when spark.executor.pyspark.memory (RLIMIT_AS) or the machine refuses memory
# outside a MemoryError: a library that cannot be mapped, ENOMEM, C++ allocation failures.
_PYTHON_NO_MEMORY = re.compile(
    r"failed to map segment from shared object|Cannot allocate memory|std::bad_alloc|out of memory", re.I
)
_RESULT_SIZE = re.compile(r"Total size of serialized results of [^\n]*? is bigger than spark\.driver\.maxResultSize[^\n]*")
_MEMORY_KILL = re.compile(
    r"exceeding (?:physical |virtual )?memory limits|memoryOverhead|OOMKilled|exit code 137|code 137\b|"
    r"SIGKILL|possible container OOM|killed by the kernel",
    re.I,
)
_HEARTBEAT = re.compile(r"heartbeat timed out|Executor heartbeat", re.I)
_STOPPED = re.compile(
    r"SparkContext was shut down|Cannot call methods on a stopped SparkContext|"
    r"SparkContext has been shutdown|Answer from Java side is empty|Error while sending or receiving"
)
_JAVA_EXC_LINE = re.compile(r"(?:^|: )(?P<line>(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)\b[^\n]*)", re.M)


class SparkJobError(RuntimeError):
    """A Spark failure :func:`explain` could not explain, as one line (:func:`summary`): a bug
    to report (exit 3), not a :class:`KgtoolError`."""


@dataclass
class SparkState:
    """What is known about the Spark application besides the exception."""

    #: ``--master`` (``local[*]``...), None when unknown.
    master: str | None = None
    #: Settings in effect (what kgtool passed, or the live SparkContext's).
    conf: dict[str, str] = field(default_factory=dict)
    #: The driver JVM's exit status when it is gone (negative: killed by that signal).
    jvm_exit: int | None = None
    #: The driver JVM's captured output (its tail), when kgtool captured it.
    output: str = ""

    @property
    def local(self) -> bool | None:
        master = self.master or self.conf.get("spark.master")
        if master is None:
            return None
        return master == "local" or master.startswith("local[")


_JVM_OOM = re.compile(r"java\.lang\.OutOfMemoryError")


def explain(exc: BaseException, state: SparkState | None = None) -> KgtoolError | None:
    """The kgtool error to report for an exception raised by a Spark job, or None when it is
    not a failure this module understands (then it is a bug: report it as such, see
    :func:`summary`). A :class:`KgtoolError` is returned unchanged."""
    if isinstance(exc, KgtoolError):
        return exc
    if not is_spark_exception(exc):
        return None
    # Read once: a Py4JJavaError's text comes from the JVM, which may be exiting right now.
    text, unreadable = _read_exception(exc)
    lost = unreadable or connection_lost(exc) or _STOPPED.search(text) is not None
    observed = state is None
    if state is None:
        state = observe(wait_for_exit=lost)
    err = explain_text(text, state, connection_lost=lost)
    if err is None and observed and not lost:
        # Nothing recognizable: a JVM dying as it answered (py4j's bare "An error occurred while
        # calling o53.collectToPython") looks like this. If kgtool's JVM exits now, that is it.
        later = observe(wait_for_exit=True, wait=5.0)
        if later.jvm_exit is not None:
            err = explain_text(text, later, connection_lost=True)
    return err


def explain_text(text: str, state: SparkState | None = None, *, connection_lost: bool = False) -> KgtoolError | None:
    """:func:`explain` on the text of the exception (its message, Java stack trace included)."""
    state = state or SparkState()
    task = _TASK_FAILURE.search(text)
    python_exc = last_python_exception(text)
    if python_exc is not None:
        cls, msg = python_exc
        err = _kgtool_error(cls, msg)
        if err is not None:
            return err
        name = cls.rsplit(".", 1)[-1]
        # An ImportError's message spans lines (numpy's: "Original error was: ... failed to map
        # segment from shared object"): look at the whole text for the memory symptom.
        if name in ("MemoryError", "ArrowMemoryError") or _PYTHON_NO_MEMORY.search(msg) or (
                name == "ImportError" and _PYTHON_NO_MEMORY.search(text)):
            return SparkFailure(
                f"spark-audit: a Spark Python worker ran out of memory ({_short(name + (': ' + msg if msg else ''), 160)}"
                f"{_times(task)}): {_python_memory_advice(state)}"
            )
    oom = _JAVA_OOM.search(text) or _SPARK_OOM.search(text)
    if oom is not None:
        what = _oom_text(oom)
        on_executor = task is not None and task.group("executor") != "driver" and state.local is not True
        if on_executor:
            return SparkFailure(
                f"spark-audit: a Spark executor ran out of memory ({what}, executor {task.group('executor')}"
                f"{_times(task)}): {_raise('spark.executor.memory', state)}"
            )
        return _driver_oom(what, state)
    result = _RESULT_SIZE.search(text)
    if result is not None:
        return SparkFailure(
            f"spark-audit: the results sent to the driver exceed spark.driver.maxResultSize ({_short(result.group(0))}): "
            f"{_raise('spark.driver.maxResultSize', state)}"
        )
    lost_executor = _EXECUTOR_LOST.search(text)
    if lost_executor is not None:
        return _executor_lost(lost_executor, task, state)
    if _PYTHON_WORKER_DIED.search(text):
        return SparkFailure(
            "spark-audit: a Spark Python worker died (killed, e.g. by the kernel's out-of-memory killer, "
            f"or crashed{_times(task, sep='; ')}): {_python_killed_advice(state)}"
        )
    if connection_lost or _STOPPED.search(text) or state.jvm_exit is not None:
        return _jvm_gone(state)
    if task is not None and int(task.group("times")) > 1 and python_exc is None:
        n = int(task.group("times"))
        return SparkFailure(
            f"spark-audit: a Spark task failed {n} times, the limit spark.task.maxFailures "
            f"(last: {_short(task.group('cause'))}): if the failures are transient, "
            f"{_raise('spark.task.maxFailures', state, current=str(n))}"
        )
    return None


def summary(exc: BaseException) -> str:
    """One line for a Spark exception :func:`explain` did not explain (a bug, most likely)."""
    text = exception_text(exc)
    python_exc = last_python_exception(text)
    if python_exc is not None:
        cls, msg = python_exc
        return _short(f"{cls}: {msg}" if msg else cls, 300) + " (in a Spark task)"
    task = _TASK_FAILURE.search(text)
    if task is not None:
        return f"a Spark task failed {_plural(int(task.group('times')), 'time')}: {_short(task.group('cause'), 300)}"
    java = _JAVA_EXC_LINE.search(text)
    if java is not None:
        return _short(java.group("line"), 300)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    return _short(first, 300)


def startup_problem(exc: BaseException, output: str = "") -> str:
    """One line for a driver JVM or SparkContext that did not start: the real cause, and the
    setting that fixes it when kgtool knows it (:data:`STARTUP_FIXES`).

    The cause is the Java exception of ``exc`` with its first ``Caused by:`` (a Kubernetes
    client's "An error has occurred." says nothing without it), else, when ``exc`` says only
    that the JVM exited (``JAVA_GATEWAY_EXITED``) or the context stopped, the JVM's own
    complaint in its captured ``output``: spark-submit's argument check (``Exception in thread
    "main" org.apache.spark.SparkException: When running with master 'yarn' either
    HADOOP_CONF_DIR or YARN_CONF_DIR must be set in the environment.``), a JVM option it
    refused (``Invalid maximum heap size: -Xmx1x``), the scheduler giving up (``ERROR
    StandaloneSchedulerBackend: Application has been killed. Reason: All masters are
    unresponsive! Giving up.``)."""
    text = exception_text(exc)
    java = _JAVA_EXC_LINE.search(text)
    if java is not None and not _STOPPED.search(java.group("line")):
        cause = _exception_message(java.group("line")) + _caused_by(text[java.end():])
    else:
        cause = _output_complaint(output)
        if cause is None:
            line = java.group("line") if java is not None else next(
                (ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
            cause = _exception_message(line)
    cause = _short(cause, 400)
    fix = next((advice for pattern, advice in STARTUP_FIXES if pattern.search(cause)), None)
    return f"{cause.rstrip('.')}: {fix}" if fix else cause


#: What fixes a start-up failure, by its cause (spark-submit's and the JVM's own wording).
STARTUP_FIXES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"HADOOP_CONF_DIR or YARN_CONF_DIR must be set"),
     "set HADOOP_CONF_DIR (or YARN_CONF_DIR) to the directory holding the cluster's core-site.xml and "
     "yarn-site.xml"),
    (re.compile(r"Master must (?:either )?be|Could not parse Master URL", re.I),
     "--master takes local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT"),
    (re.compile(r"All masters are unresponsive"),
     "no Spark master answered at the --master URL: check the host and port (spark://HOST:7077) and that "
     "the master is running"),
    (re.compile(r"Invalid (?:maximum|initial) heap size|Too small (?:maximum|initial) heap", re.I),
     "spark.driver.memory takes a JVM size such as 2g or 2048m (--conf spark.driver.memory=2g)"),
]

_STARTUP_NOISE = re.compile(
    r"Could not create the Java Virtual Machine|A fatal exception has occurred|Using incubator modules|"
    r"^\s+at |^\s+\.\.\. \d+ more|^Caused by:|^\S+ \S+ (?:INFO|WARN|DEBUG) "
)
_STARTUP_COMPLAINT = re.compile(r"error|exception|invalid|unrecognized|cannot|could not|failed|must", re.I)
_LOG_ERROR = re.compile(r"^\S+ \S+ ERROR \S+: (?P<msg>.*)$")
_THREAD_PREFIX = re.compile(r'^Exception in thread "[^"]*" ')
_CAUSED_BY = re.compile(r"^Caused by: (?P<line>.+)$", re.M)


def _exception_message(line: str) -> str:
    """A Java exception line as a person reads it: without ``Exception in thread "main"``, and
    without the class when it is Spark's generic ``SparkException`` (the message says it all)."""
    line = _THREAD_PREFIX.sub("", line.strip())
    return re.sub(r"^org\.apache\.spark\.SparkException: ", "", line)


def _caused_by(trace: str) -> str:
    """`` (caused by X)``: the first ``Caused by:`` of the stack trace that follows, if any."""
    m = _CAUSED_BY.search(trace)
    return "" if m is None else f" (caused by {m.group('line').strip()})"


def _output_complaint(output: str) -> str | None:
    """The JVM's complaint in its captured output: the last ERROR log line's message, else the
    first line that reads like an error (noise and stack frames left out)."""
    lines = [ln.rstrip() for ln in output.splitlines() if ln.strip()]
    for ln in reversed(lines):
        m = _LOG_ERROR.match(ln)
        if m and not m.group("msg").startswith(("Error initializing SparkContext", "Uncaught exception")):
            return m.group("msg")
    candidates = [ln.strip() for ln in lines if not _STARTUP_NOISE.search(ln) and not _LOG_ERROR.match(ln)]
    complaint = next((ln for ln in candidates if _STARTUP_COMPLAINT.search(ln)), None)
    return None if complaint is None else _exception_message(complaint)


# --- reading the exception ------------------------------------------------------------------


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen or len(seen) > 16:
            continue
        seen.add(id(e))
        yield e
        todo += [e.__cause__, e.__context__]  # type: ignore[list-item]


def is_spark_exception(exc: BaseException) -> bool:
    """Raised by PySpark or py4j (or caused by them)."""
    return any(type(e).__module__.split(".")[0] in ("pyspark", "py4j") for e in _chain(exc))


def connection_lost(exc: BaseException) -> bool:
    """The driver JVM stopped answering: py4j's network errors (and the ConnectionRefusedError
    of the next call), a gateway that exited."""
    for e in _chain(exc):
        name = type(e).__name__
        if name in ("Py4JNetworkError", "ConnectionRefusedError", "ConnectionResetError"):
            return True
        if name == "PySparkRuntimeError" and "JAVA_GATEWAY_EXITED" in _safe_str(e):
            return True
    return False


def _safe_str(e: BaseException) -> str:
    return _str_or_none(e) or str(getattr(e, "errmsg", "") or type(e).__name__)


def _str_or_none(e: BaseException) -> str | None:
    try:
        return str(e)
    except Exception:  # noqa: BLE001 - Py4JJavaError.__str__ asks the JVM, which may be gone
        return None


def _read_exception(exc: BaseException) -> tuple[str, bool]:
    """The text of the exception and its causes, and whether some of it could not be read
    (a Py4JJavaError whose JVM no longer answers)."""
    parts, unreadable = [], False
    for e in _chain(exc):
        text = _str_or_none(e)
        if text is None:
            unreadable = True
            text = str(getattr(e, "errmsg", "") or type(e).__name__)
        parts.append(text)
        stack = getattr(e, "_stackTrace", None)
        if isinstance(stack, str) and stack:
            parts.append(stack)
    return "\n".join(parts), unreadable


def exception_text(exc: BaseException) -> str:
    """Everything the exception (and its causes) says: PySpark's message, the Java exception
    and stack trace of a Py4JJavaError (whose text the JVM supplies, if it is still there)."""
    return _read_exception(exc)[0]


def last_python_exception(text: str) -> tuple[str, str] | None:
    """``(class, message)`` of the exception a Python task raised: the last line of the first
    Python traceback in ``text`` (the outermost exception when they are chained)."""
    at = text.find(_TRACEBACK)
    if at < 0:
        return None
    found = None
    expecting = True  # after a traceback's frames, the first unindented line names the exception;
    # the lines after it, up to the next traceback, continue its message (e.g. numpy's ImportError)
    for line in text[at + len(_TRACEBACK):].splitlines():
        if line.startswith(("\tat ", "Caused by:", "Driver stacktrace:", "JVM stacktrace:", " SQLSTATE:")):
            break
        if line.startswith(_TRACEBACK.strip()):
            expecting = True
            continue
        if not expecting or not line or line[0].isspace():
            continue
        m = _EXC_LINE.match(line.rstrip())
        if m:
            found = (m.group("cls"), (m.group("msg") or "").strip())
            expecting = False
    return found


def _kgtool_error(cls_path: str, msg: str) -> KgtoolError | None:
    if not cls_path.startswith("kgtool."):
        return None
    module, _, name = cls_path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, KgtoolError)):
        # A kgtool error the driver does not know (a different kgtool on the executors).
        return KgtoolError(msg)
    err = cls.__new__(cls)
    KgtoolError.__init__(err, msg)
    if isinstance(err, DecodeError):
        err.reason, err.source, err.position, err.context = msg, None, None, None
    return err


def observe(wait_for_exit: bool = False, wait: float = 10.0) -> SparkState:
    """What :mod:`kgtool.spark.session` knows of the driver JVM it started (settings, exit
    status, captured output), else the live SparkContext's settings (spark-submit)."""
    from kgtool.spark import session

    state = SparkState()
    launch = session.launched
    if launch is not None:
        state.master = launch.master
        state.conf = dict(launch.settings)
        state.jvm_exit = launch.exit_status(wait=wait if wait_for_exit else 0.0)
        state.output = launch.output_tail()
    if state.jvm_exit is None and not wait_for_exit:
        try:
            from pyspark import SparkContext

            sc = SparkContext._active_spark_context
            if sc is not None:
                state.conf = {**state.conf, **dict(sc.getConf().getAll())}
                state.master = sc.master
        except Exception:  # noqa: BLE001 - best effort: the JVM may be gone
            pass
    return state


# --- messages -------------------------------------------------------------------------------


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _times(task: re.Match[str] | None, sep: str = ", ") -> str:
    if task is None or int(task.group("times")) < 2:
        return ""
    return f"{sep}task failed {_plural(int(task.group('times')), 'time')}"


def _oom_text(m: re.Match[str]) -> str:
    detail = (m.groupdict().get("detail") or "").strip()
    if m.re is _JAVA_OOM:
        return "java.lang.OutOfMemoryError" + (f": {_short(detail, 80)}" if detail else "")
    return _short(m.group(0), 120)


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.I)


def _mib(value: str) -> float | None:
    """A JVM memory string (``1g``, ``512m``, ``2048`` = MiB) in MiB."""
    m = _SIZE.match(value)
    if not m:
        return None
    n = float(m.group(1))
    return n * {"": 1, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[m.group(2).lower()]


def _size(mib: float) -> str:
    mib = int(round(mib))
    return f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"


def _current(key: str, state: SparkState) -> str | None:
    if key in state.conf:
        return state.conf[key]
    if key == "spark.executor.memoryOverhead":
        executor = _mib(state.conf.get("spark.executor.memory", "1g")) or 1024
        return _size(max(384, executor * 0.10))
    if key == "spark.task.maxFailures" and state.local:
        m = re.match(r"local\[[^,\]]+,\s*(\d+)\]", state.master or "")
        return m.group(1) if m else "1"
    return SPARK_DEFAULTS.get(key)


#: Suggestions below these are too small to help (a Python worker maps a few hundred MiB of
#: libraries: pyarrow, numpy).
_MIN_SUGGESTED = {"spark.executor.pyspark.memory": 1024}


def _raise(key: str, state: SparkState, current: str | None = None) -> str:
    """``raise KEY (now V): --conf KEY=2V``."""
    now = current or _current(key, state)
    if key == "spark.task.maxFailures":
        suggested = str(max(8, 2 * int(now))) if now and now.isdigit() else "8"
    else:
        size = _mib(now) if now else None
        suggested = _size(max(2 * size, _MIN_SUGGESTED.get(key, 0))) if size else "2g"
    shown = f" (now {now})" if now else ""
    return f"raise {key}{shown}: --conf {key}={suggested}"


def _driver_oom(what: str, state: SparkState) -> SparkFailure:
    local = " (in local mode it also runs the tasks)" if state.local else ""
    return SparkFailure(
        f"spark-audit: Spark's driver JVM ran out of memory ({what}){local}: {_raise('spark.driver.memory', state)}"
    )


def _python_memory_advice(state: SparkState) -> str:
    if "spark.executor.pyspark.memory" in state.conf:
        return _raise("spark.executor.pyspark.memory", state)
    if state.local:
        return "this machine is out of memory: run fewer tasks at once (--master local[1])"
    return _raise("spark.executor.memoryOverhead", state)


def _python_killed_advice(state: SparkState) -> str:
    if state.local:
        return "if this machine ran out of memory, run fewer tasks at once (--master local[1])"
    return _raise("spark.executor.memoryOverhead", state)


def _executor_lost(m: re.Match[str], task: re.Match[str] | None, state: SparkState) -> SparkFailure:
    executor = m.group("executor")
    reason = (m.group("reason") or "").strip()
    said = f"executor {executor}" + (f": {_short(reason, 160)}" if reason else "")
    if re.search(r"(?:exit(?:ed with)? code|exited with code)\s*52\b", reason):
        return SparkFailure(
            f"spark-audit: a Spark executor ran out of memory and exited ({said}{_times(task)}): "
            f"{_raise('spark.executor.memory', state)}"
        )
    if _MEMORY_KILL.search(reason):
        return SparkFailure(
            f"spark-audit: a Spark executor was killed for exceeding its memory limit ({said}{_times(task)}): "
            f"{_raise('spark.executor.memoryOverhead', state)}"
        )
    if _HEARTBEAT.search(reason):
        return SparkFailure(
            f"spark-audit: a Spark executor stopped responding, usually from long garbage collections "
            f"({said}{_times(task)}): {_raise('spark.executor.memory', state)}"
        )
    return SparkFailure(
        f"spark-audit: a Spark executor was lost ({said}{_times(task)}): if executors are lost for "
        f"transient reasons, {_raise('spark.task.maxFailures', state)}"
    )


def _jvm_gone(state: SparkState) -> SparkFailure:
    oom = _JAVA_OOM.search(state.output)
    status = state.jvm_exit
    if oom is not None or status == SPARK_EXIT_OOM:
        what = _oom_text(oom) if oom is not None else "java.lang.OutOfMemoryError"
        return _driver_oom(what, state)
    if status is not None and status in (-9, 137):
        return SparkFailure(
            "spark-audit: Spark's driver JVM was killed (SIGKILL), most likely by the kernel's out-of-memory "
            f"killer: this machine cannot hold spark.driver.memory (now {_current('spark.driver.memory', state)}) "
            "and the Python workers; lower it or run fewer tasks at once (--master local[1])"
        )
    if status is not None:
        how = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
        last = _last_error_line(state.output)
        return SparkFailure(
            f"spark-audit: Spark's driver JVM exited during the job ({how}{': ' + last if last else ''})"
        )
    return SparkFailure(
        "spark-audit: the connection to Spark's driver JVM was lost (did it run out of memory or get killed?): "
        f"{_raise('spark.driver.memory', state)}"
    )


def _last_error_line(output: str) -> str:
    for line in reversed(output.splitlines()):
        if " ERROR " in line or line.startswith(("Error", "Exception")):
            return _short(line, 160)
    return ""
