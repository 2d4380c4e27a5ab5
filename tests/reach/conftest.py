"""One archive, published with the real `arkfs publish` into an embedded store that a real
`arkfs serve` serves: the reach tests read it both ways and compare with the tree."""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arkfs.download import PIECE
from tests.support.archive import make_tree, publish
from tests.support.server import arkfs_server

ARK = "ark:12345/x6np1wh8k"
TABLES = "ark:12345/x7tables"  # a CSV, a Parquet file and a Zarr store
TOKEN = "reach-read-token-7c1d"  # the server's read token


ROWS = 400_000  # of the Parquet table: 5 float64 columns, ~16 MB


# big.bin: three pieces of `arkfs get` and a bit, so that a get interrupted after its first
# piece (which finishes the piece under way) leaves one never begun
BIG = 3 * PIECE + 5


def make_tables(root: Path) -> Path:
    """table.csv, table.parquet (five columns, several row groups), grid.zarr, big.bin."""
    import numpy as np
    import pandas as pd
    import xarray as xr

    root.mkdir()
    rng = np.random.default_rng(29)
    frame = pd.DataFrame({c: rng.random(ROWS) for c in "abcde"})
    frame.iloc[:1000].to_csv(root / "table.csv", index=False)
    frame.to_parquet(root / "table.parquet", row_group_size=100_000)
    grid = xr.Dataset({"t": (("y", "x"), rng.random((200, 300)))}, coords={"y": np.arange(200)})
    grid.to_zarr(root / "grid.zarr", mode="w")
    (root / "big.bin").write_bytes(rng.bytes(BIG))
    return root


@dataclass(frozen=True)
class Published:
    tree: Path  # the source tree of ARK
    tables: Path  # the source tree of TABLES
    store: Path  # the embedded store that holds ARK (version 2: readme.txt changed)
    url: str  # `arkfs serve` of that store
    first_readme: bytes  # readme.txt as version 1 had it


@pytest.fixture(scope="session")
def reach_archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Published]:
    base = tmp_path_factory.mktemp("reach")
    tree = make_tree(base / "tree")
    store = base / "store"
    publish(tree, ARK, "--store", str(store))
    first = (tree / "readme.txt").read_bytes()
    (tree / "readme.txt").write_bytes(b"hello again, archive\n")
    publish(tree, ARK, "--store", str(store))
    publish(make_tables(base / "tables"), TABLES, "--store", str(store))
    (base / "tokens").write_text(f"{TOKEN} read\n")
    with arkfs_server(store, "--tokens", str(base / "tokens")) as (url, _):
        yield Published(tree, base / "tables", store, url, first)


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No config file or token of the user's reaches the tests."""
    monkeypatch.setenv("ARKFS_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.delenv("ARKFS_TOKEN", raising=False)
