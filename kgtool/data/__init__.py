"""Data shipped inside the package: samples for the quick start and demos."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def sample_path(name: str) -> Path:
    """Filesystem path of a shipped sample (the package is installed unzipped)."""
    return Path(str(resources.files(__name__).joinpath(name)))


SAMPLE_GROUP_IDS = "sample_group_ids.txt"
