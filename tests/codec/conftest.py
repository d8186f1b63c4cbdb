"""Codec test fixtures: run record-level tests on both the C extension and pure Python."""

from __future__ import annotations

import pytest

from kgtool.codec import batch as _batch

IMPLS = ["c", "python"] if _batch._speedups is not None else ["python"]


@pytest.fixture(params=IMPLS)
def impl(request, monkeypatch):
    """'c' (the _speedups extension, when built) or 'python' (forced fallback)."""
    if request.param == "python":
        monkeypatch.setattr(_batch, "_speedups", None)
    return request.param
