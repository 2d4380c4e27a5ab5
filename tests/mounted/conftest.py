"""Fixtures of the real-mount tests: the acceptance tree."""

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.archive import make_full_tree


@pytest.fixture(scope="session")
def full_tree() -> Iterator[Path]:
    """The acceptance tree with its 1 GiB file (make_full_tree), built once per session
    and deleted at its end."""
    with tempfile.TemporaryDirectory(prefix="arkfs-tree-") as tmp:
        yield make_full_tree(Path(tmp) / "tree")
