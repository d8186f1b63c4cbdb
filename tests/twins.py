"""The compiled twin of a C-vs-Python test, which must really run.

A test that compares an extension with its pure-Python twin takes the extension from
:func:`compiled`: it fails when the extension did not build (CI builds it; comparing Python with
Python would prove nothing) and skips only when ``KGTOOL_PURE_PYTHON`` forces the pure-Python
twins on purpose.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from kgtool import native


def compiled(name: str) -> ModuleType:
    """The extension ``name`` (e.g. ``"kgtool.codec._speedups"``) for a C-vs-Python test."""
    if native.pure_forced():
        pytest.skip(f"{native.PURE_ENV} forces the pure-Python twins: no C to compare")
    module = native.load(name)
    assert module is not None, f"{name} did not build: a C-vs-Python test would compare Python with Python"
    return module


def have_compiled(name: str) -> bool:
    """For a test that checks more than the comparison: whether to compare with the extension
    ``name``. False only when ``KGTOOL_PURE_PYTHON`` forces the pure-Python twins; an extension
    that did not build fails the test."""
    if native.pure_forced():
        return False
    assert native.load(name) is not None, f"{name} did not build: a C-vs-Python test would compare Python with Python"
    return True
