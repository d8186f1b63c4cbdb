"""The one switch between kgtool's compiled extensions and their pure-Python twins.

kgtool ships C extensions (``kgtool.codec._speedups``, ``kgtool.offsets._replay``, ``kgtool.lag._kernel``,
``kgtool.partitioner._speedups``), built by ``pip install`` when a C compiler is present. Each
has a pure-Python twin that gives the same results. :func:`load` is how every module picks its
extension: the compiled module, or None when it was not built or when ``KGTOOL_PURE_PYTHON`` is
set (``1``, ``true`` or ``yes``: tests and bug reports compare both paths with it).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

#: The environment variable that forces every pure-Python twin.
PURE_ENV = "KGTOOL_PURE_PYTHON"


def pure_forced() -> bool:
    """Whether ``KGTOOL_PURE_PYTHON`` asks for the pure-Python twins."""
    return os.environ.get(PURE_ENV, "") in ("1", "true", "yes")


def load(name: str) -> ModuleType | None:
    """The compiled extension ``name`` (e.g. ``"kgtool.codec._speedups"``), or None: not built,
    or the pure-Python twins forced (:func:`pure_forced`)."""
    if pure_forced():
        return None
    try:
        return importlib.import_module(name)
    except ImportError:  # the optional extension did not build: pure Python, same results
        return None
