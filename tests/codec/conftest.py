"""Codec test fixtures: run record-level tests on both the C extension and pure Python."""

from __future__ import annotations

import pytest

from kgtool.codec import batch as _batch
from tests.twins import compiled

IMPLS = ["c", "python"]


@pytest.fixture(params=IMPLS)
def impl(request, monkeypatch):
    """'c' (the _speedups extension: fails when it did not build) or 'python' (forced fallback)."""
    if request.param == "python":
        monkeypatch.setattr(_batch, "_speedups", None)
    else:
        assert _batch._speedups is compiled("kgtool.codec._speedups")
    return request.param
