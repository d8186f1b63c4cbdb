"""Build hook for the optional C extensions ``kgtool.codec._speedups``, ``kgtool.offsets._replay``,
``kgtool.lag._kernel`` and ``kgtool.partitioner._speedups``.

Everything else is in pyproject.toml, but for the man pages: ``data_files`` installs man/*.1
into ``<prefix>/share/man/man1``, where man(1) finds them from a virtual environment whose
``bin`` is on ``PATH`` (man-db adds ``<dir>/../share/man`` for every ``<dir>`` of ``PATH``). ``optional=True``: when no compiler is available the
build goes on without them and kgtool runs its pure-Python twins (same results,
slower). ``KGTOOL_PURE_PYTHON=1`` at build time skips the extension.
"""

import glob
import os
import sys

from setuptools import Extension, setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kgtool.native import pure_forced  # noqa: E402  (the one reading of KGTOOL_PURE_PYTHON)

ext_modules = []
if not pure_forced():
    ext_modules.append(
        Extension(
            "kgtool.codec._speedups",
            sources=["kgtool/codec/_speedups.c"],
            depends=["kgtool/codec/_dump.h", "kgtool/codec/_seek.h"],  # the printer, the seek sweep: included
            libraries=["z"],  # zlib: the audit's scan inflates small gzip batches itself
            extra_compile_args=["-O3", "-std=c99", "-Wall", "-Wno-unused-function"],
            optional=True,
        )
    )
    ext_modules.append(
        Extension(
            "kgtool.offsets._replay",
            sources=["kgtool/offsets/_replay.c"],
            extra_compile_args=["-O3", "-std=c99", "-Wall"],
            optional=True,
        )
    )
    ext_modules.append(
        Extension(
            "kgtool.lag._kernel",
            sources=["kgtool/lag/_kernel.c"],
            depends=["kgtool/lag/_lag.h"],  # the kernel: included
            extra_compile_args=["-O3", "-std=c99", "-Wall"],
            optional=True,
        )
    )
    ext_modules.append(
        Extension(
            "kgtool.partitioner._speedups",
            sources=["kgtool/partitioner/_speedups.c"],
            # zlib's crc32 is librdkafka's rd_crc32 (partitioner=consistent*).
            libraries=["z"],
            extra_compile_args=["-O3", "-std=c99", "-Wall"],
            optional=True,
        )
    )

setup(
    ext_modules=ext_modules,
    data_files=[("share/man/man1", sorted(glob.glob("man/*.1")))],
)
