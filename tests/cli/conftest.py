"""CLI test helpers: a CliRunner on the real app, and a subprocess runner for the console path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgtool.cli.main import app

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def run():
    """``run(args, input=None)`` -> click Result (exit_code, stdout, stderr, output)."""
    runner = CliRunner()

    def _run(args, input=None):
        return runner.invoke(app, [str(a) for a in args], input=input)

    return _run


@pytest.fixture
def run_process():
    """Run ``python -m kgtool`` in a real process (stdin bytes, real exit code)."""

    def _run(args, input: bytes | None = None, timeout: float = 120):
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        return subprocess.run(
            [sys.executable, "-m", "kgtool", *map(str, args)],
            input=input,
            capture_output=True,
            env=env,
            timeout=timeout,
        )

    return _run
