"""The fuzz campaign in CI: a few hundred inputs per target, each target in its own process
under the campaign's memory limit (a crash or a kill names its input). ``KGTOOL_FUZZ_N=100000``
runs the long campaign (docs/development.md, "Fuzzing")."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.fuzz.targets import REPO, TARGETS

N = int(os.environ.get("KGTOOL_FUZZ_N", "250"))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_campaign(target, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-m", "tests.fuzz", "--target", target, "--n", str(N), "--out", str(tmp_path)],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=3600)
    if p.returncode < 0 or (p.returncode and not p.stdout.strip()):
        current = [f for f in os.listdir(tmp_path) if f.startswith("current-")]
        pytest.fail(f"the campaign died (status {p.returncode}) on {current}: {p.stderr[-2000:]}")
    report = json.loads(p.stdout.strip().splitlines()[-1])
    assert report["inputs"] == N
    assert not report["failures"], "\n".join(f"{f['file']}: {f['reason']}" for f in report["failures"][:10])
