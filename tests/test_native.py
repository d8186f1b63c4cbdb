"""The one C-or-Python switch (``kgtool.native``): the extensions are built where the tests run
(a C-vs-Python test that silently compared Python with Python would prove nothing), and
``KGTOOL_PURE_PYTHON`` turns every one of them off."""

from __future__ import annotations

import pytest

from kgtool import native

EXTENSIONS = ["kgtool.codec._speedups", "kgtool.offsets._replay", "kgtool.partitioner._speedups"]


@pytest.mark.skipif(native.pure_forced(), reason="KGTOOL_PURE_PYTHON forces the pure-Python twins")
@pytest.mark.parametrize("name", EXTENSIONS)
def test_extension_built(name):
    assert native.load(name) is not None, f"{name} did not build: install a C compiler and reinstall kgtool"


@pytest.mark.parametrize("value", ["1", "true", "yes"])
def test_pure_python_forced(monkeypatch, value):
    monkeypatch.setenv(native.PURE_ENV, value)
    assert native.pure_forced()
    assert all(native.load(name) is None for name in EXTENSIONS)


@pytest.mark.parametrize("value", ["", "0", "no"])
def test_pure_python_not_forced(monkeypatch, value):
    monkeypatch.setenv(native.PURE_ENV, value)
    assert not native.pure_forced()
    assert native.load("kgtool.no_such_extension") is None
