"""The one exception hierarchy of kgtool, and the exit codes it maps to.

Every error meant for a user derives from :class:`KgtoolError` and carries its exit code.
Only :mod:`kgtool.cli.main` turns exceptions into exit codes and messages; domain modules
raise and never print or exit.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, the same for every subcommand."""

    OK = 0
    #: Findings or corruption were reported (stale commits, CRC failures, bad batches).
    FINDINGS = 1
    #: Usage or input error: bad option, unreadable file, malformed description.
    USAGE = 2
    #: A bug in kgtool itself (a non-kgtool exception); traceback with ``--debug``.
    INTERNAL = 3
    #: Spark could not finish the job for lack of resources: out of memory (driver, executor,
    #: Python worker), an executor or Python worker lost, a task failing past
    #: ``spark.task.maxFailures``, the JVM gone. The message names the setting to change; the
    #: same run may succeed with it (or on a less loaded machine), unlike a usage error.
    SPARK_RESOURCES = 4


class KgtoolError(Exception):
    """Base of every user-facing kgtool error."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(KgtoolError):
    """The command line is wrong: a bad option value or a contradictory combination."""

    exit_code = ExitCode.USAGE


class InputError(KgtoolError):
    """An input file or stream cannot be used: unreadable, malformed, or of the wrong kind."""

    exit_code = ExitCode.USAGE


class DecodeError(InputError):
    """Bytes that do not decode, with where and what.

    ``source`` names the file (or ``<stdin>``/``<hex>``), ``position`` the absolute byte
    position of the problem, ``context`` a path inside the structure such as
    ``batch@4096.records[17].key``. The message reads
    ``segment.log: byte 4213 (batch@4096.records[17].key): length 812 exceeds 301 bytes remaining``.
    """

    def __init__(
        self,
        reason: str,
        *,
        source: str | None = None,
        position: int | None = None,
        context: str | None = None,
    ) -> None:
        self.reason = reason
        self.source = source
        self.position = position
        self.context = context
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.source is not None:
            where.append(f"{self.source}:")
        if self.position is not None:
            where.append(f"byte {self.position}")
        if self.context:
            where.append(f"({self.context})")
        prefix = " ".join(where)
        return f"{prefix}: {self.reason}" if prefix else self.reason

    def located(
        self, *, source: str | None = None, offset: int = 0, context: str | None = None
    ) -> DecodeError:
        """Return a copy placed in a larger input: shift the position, name the source."""
        cls = type(self)
        err = cls.__new__(cls)
        DecodeError.__init__(
            err,
            self.reason,
            source=source if source is not None else self.source,
            position=None if self.position is None else self.position + offset,
            context=context if context is not None else self.context,
        )
        return err


class FindingsReported(KgtoolError):
    """Raised by a command after it printed findings (corruption, stale commits): exit 1."""

    exit_code = ExitCode.FINDINGS


class EnvironmentProblem(KgtoolError):
    """Something the machine lacks (e.g. Java 17+ for Spark)."""

    exit_code = ExitCode.USAGE


class SparkFailure(KgtoolError):
    """Spark could not complete the job (memory, a lost executor or worker, too many task
    failures, the JVM gone): one line naming the cause and the ``--conf KEY=VALUE`` to change.

    Built by :func:`kgtool.spark.failures.explain` from Spark's exceptions; code that runs in a
    Spark task may raise it too (e.g. a group too large for one task's memory), and it reaches
    the user with its message and exit code 4.
    """

    exit_code = ExitCode.SPARK_RESOURCES
