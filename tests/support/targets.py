"""The two targets every publish behaviour is tested on: the embedded store and `arkfs serve`."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from arkfs.publish.index import index_path
from tests.support.server import arkfs_server

WRITE = "w-token"


@pytest.fixture(params=["embedded", "serve"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[list[str], Path]]:
    """The options that name the target, and the directory its bytes are stored in."""
    store = tmp_path / "store"
    if request.param == "embedded":
        yield ["--store", str(store)], store
        return
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{WRITE} write\n")
    os.environ["ARKFS_TOKEN"] = WRITE
    try:
        with arkfs_server(store, "--tokens", str(tokens)) as (url, _):
            yield ["--server", url], store
    finally:
        del os.environ["ARKFS_TOKEN"]


def tree_index_path(where: list[str], store: Path, tree: Path) -> Path:
    """Where a publish of tree to the target named by where (and store) keeps its index."""
    return index_path(where[1] if where[0] == "--server" else os.path.abspath(store), tree)


def forget_scan(where: list[str], store: Path, tree: Path) -> None:
    """Drop the scan the tree index remembers, so a republish looks each file up."""
    tree_index_path(where, store, tree).with_suffix(".scan").unlink()
