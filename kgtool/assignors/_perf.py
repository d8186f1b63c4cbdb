"""Keeping Python's cyclic garbage collector out of the assignors' hot loops.

An assignment of a large group allocates a million ``(topic, partition)`` tuples; every 700
container allocations CPython runs a young-generation collection, and the older generations'
passes walk every live tuple, including the described group itself. None of these objects can
form a reference cycle, so the collector is paused while an assignor runs (and restored after).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)


def gc_paused(fn: F) -> F:
    """Run ``fn`` with the cyclic garbage collector disabled (re-enabled if it was on)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper  # type: ignore[return-value]
