"""Build hook for the optional C extension ``kgtool.codec._speedups``.

Everything else is in pyproject.toml. ``optional=True``: when no compiler is available the
build goes on without the extension and kgtool runs its pure-Python codec (same results,
slower). ``KGTOOL_PURE_PYTHON=1`` at build time skips the extension.
"""

import os

from setuptools import Extension, setup

ext_modules = []
if os.environ.get("KGTOOL_PURE_PYTHON", "") not in ("1", "true", "yes"):
    ext_modules.append(
        Extension(
            "kgtool.codec._speedups",
            sources=["kgtool/codec/_speedups.c"],
            extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wno-unused-function"],
            optional=True,
        )
    )

setup(ext_modules=ext_modules)
