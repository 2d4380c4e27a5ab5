"""The `ark://` fsspec filesystem with the real pandas, pyarrow, zarr and xarray, on
`arkfs serve` and on the embedded store, compared with the source trees."""

import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import xarray as xr
import zarr

from arkfs.fsspec_ark import ArkFileSystem
from tests.reach.conftest import ARK, TABLES, TOKEN, Published
from tests.support.faults import fault_proxy

A = ARK.removeprefix("ark:")
T = TABLES.removeprefix("ark:")


@pytest.fixture(params=["server", "store"])
def options(
    request: pytest.FixtureRequest, reach_archive: Published, tmp_path: Path
) -> Iterator[dict[str, Any]]:
    """storage_options for one of the two ways in; the filesystems made are closed after."""
    where: dict[str, Any] = {"store": str(reach_archive.store)}
    if request.param == "server":
        where = {"server": reach_archive.url, "token": TOKEN}
    yield {**where, "cache_dir": str(tmp_path / "cache")}
    for fs in list(ArkFileSystem._cache.values()):
        fs.client.close()
    ArkFileSystem.clear_instance_cache()


def test_the_entry_point_registers_ark(options: dict[str, Any]) -> None:
    assert isinstance(fsspec.filesystem("ark", **options), ArkFileSystem)


def test_ls_info_find_cat_open(options: dict[str, Any], reach_archive: Published) -> None:
    fs = fsspec.filesystem("ark", **options)
    tree = reach_archive.tree
    names = sorted(fs.ls(f"ark://{A}/c3", detail=False))
    assert names == [f"{A}/c3/deep", f"{A}/c3/s5.v7.xsl"]
    info = fs.info(f"ark://{A}/data/one")
    assert (info["type"], info["size"], info["mode"]) == ("file", 1, 0o600)
    assert fs.info(f"{A}/c3")["type"] == "directory"
    found = fs.find(f"{A}/c3")
    assert found == [f"{A}/c3/deep/er/leaf.bin", f"{A}/c3/s5.v7.xsl"]
    big = (tree / "data/big.bin").read_bytes()
    assert fs.cat_file(f"{A}/data/big.bin", 1_000_000, 1_000_100) == big[1_000_000:1_000_100]
    assert fs.cat_file(f"{A}/data/big.bin") == big
    with fsspec.open(f"ark://{A}/data/big.bin", **options) as f:
        f.seek(3 * 1024 * 1024)
        assert f.read() == big[3 * 1024 * 1024 :]
    assert fs.cat_file(f"ark://{A}/@v1/readme.txt") == reach_archive.first_readme
    assert fs.cat_file(f"ark://{A}/link") == (tree / "readme.txt").read_bytes()
    with pytest.raises(FileNotFoundError):
        fs.info(f"{A}/no-such-file")


def test_the_top_lists_naans_and_a_naan_its_archives(
    options: dict[str, Any], reach_archive: Published
) -> None:
    fs = fsspec.filesystem("ark", **options)
    assert fs.ls("ark://", detail=False) == ["12345"]
    assert fs.ls("ark://12345", detail=False) == [A, T]
    assert fs.info("12345") == {"name": "12345", "type": "directory", "size": 0}
    assert fs.glob("12345/*/readme.txt") == [f"{A}/readme.txt"]
    assert not fs.exists("ark://99999")
    with pytest.raises(FileNotFoundError):
        fs.ls("ark://99999")


def test_modified_times_and_read_only_refusals(
    options: dict[str, Any], reach_archive: Published
) -> None:
    fs = fsspec.filesystem("ark", **options)
    mtime = (reach_archive.tree / "c3/s5.v7.xsl").stat().st_mtime
    assert fs.modified(f"{A}/c3/s5.v7.xsl").timestamp() == pytest.approx(mtime, abs=1e-6)
    # An archive's top is its root directory as published, as the mount shows it: the
    # tree's own mode and mtime (not changed between v1 and v2), not when a version was made.
    root = reach_archive.tree.stat()
    made = [v.created for v in fs.client.info(ARK).versions]
    for top in (f"{A}/@v1", A):
        assert fs.modified(top).timestamp() == pytest.approx(root.st_mtime, abs=1e-6)
        assert fs.info(top)["mode"] == stat.S_IMODE(root.st_mode)
    assert fs.modified(A).timestamp() != pytest.approx(made[-1], abs=1e-6)
    for write in (
        lambda: fs.rm(f"{A}/readme.txt"),
        lambda: fs.mkdir(f"{A}/new"),
        lambda: fs.pipe(f"{A}/new.txt", b"x"),
        lambda: fs.mv(f"{A}/readme.txt", f"{A}/moved.txt"),
        lambda: fs.open(f"{A}/new.txt", "wb"),
    ):
        with pytest.raises(PermissionError, match="read-only"):
            write()
    assert fs.cat_file(f"{A}/readme.txt") == (reach_archive.tree / "readme.txt").read_bytes()


def _read_in_child(read: Any, out: Any) -> None:
    try:
        out.put(read())
    except Exception as exc:  # the parent asserts on what came back
        out.put(f"{type(exc).__name__}: {exc}")


def test_a_forked_worker_reads_through_what_it_inherited(
    options: dict[str, Any], reach_archive: Published
) -> None:
    """A DataLoader worker is a fork: the filesystem and the files open in the parent must
    read there too (the parent's trio thread is not in the child), and the right bytes."""
    import multiprocessing

    fs = fsspec.filesystem("ark", **options)
    big = (reach_archive.tree / "data/big.bin").read_bytes()
    f = fs.open(f"{A}/data/big.bin")
    assert f.read(10) == big[:10]
    fork = multiprocessing.get_context("fork")
    unread = fs.open(f"{A}/readme.txt")
    reads = {
        "close unread": lambda: (unread.close(), "closed")[
            1
        ],  # no answer awaited from the parent's thread
        "cat": lambda: fs.cat_file(f"{A}/readme.txt"),
        "open file": lambda: (f.seek(2_000_000), f.read(1_000_000))[1],
        "listing": lambda: fs.ls(f"{A}/c3", detail=False),
    }
    for name, read in reads.items():
        out = fork.Queue()
        child = fork.Process(target=_read_in_child, args=(read, out))
        child.start()
        try:
            got = out.get(timeout=60)
            child.join(60)
        finally:
            child.kill()  # a child that hangs is stopped, not left behind
        assert got == read() and child.exitcode == 0, name  # as the parent reads, still working


def test_pandas_reads_csv(options: dict[str, Any], reach_archive: Published) -> None:
    got = pd.read_csv(f"ark://{T}/table.csv", storage_options=options)
    pd.testing.assert_frame_equal(got, pd.read_csv(reach_archive.tables / "table.csv"))


def test_pyarrow_reads_a_column_subset_fetching_only_its_chunks(
    options: dict[str, Any], reach_archive: Published
) -> None:
    fs = fsspec.filesystem("ark", **options)
    truth = pq.read_table(reach_archive.tables / "table.parquet", columns=["b"])
    stats = fs.client.reader.stats
    before = stats.bytes_fetched
    got = pq.read_table(f"{T}/table.parquet", columns=["b"], filesystem=fs)
    fetched = stats.bytes_fetched - before
    assert got.equals(truth)
    size = (reach_archive.tables / "table.parquet").stat().st_size
    print(f"column b of 5: {fetched} bytes fetched of {size} ({fetched / size:.0%})")
    assert fetched < size / 2
    groups = pq.ParquetFile(fs.open(f"{T}/table.parquet")).read_row_group(2, columns=["c"])
    assert groups.equals(
        pq.ParquetFile(reach_archive.tables / "table.parquet").read_row_group(2, columns=["c"])
    )


def test_zarr_and_xarray_read_a_store(options: dict[str, Any], reach_archive: Published) -> None:
    truth = xr.open_zarr(reach_archive.tables / "grid.zarr")
    got = xr.open_zarr(f"ark://{T}/grid.zarr", storage_options=options)
    xr.testing.assert_identical(got.load(), truth.load())
    group = zarr.open(f"ark://{T}/grid.zarr", mode="r", storage_options=options)
    assert np.array_equal(group["t"][:], truth["t"].values)  # type: ignore[index,arg-type]


def test_a_flipped_byte_fails_with_one_oserror(reach_archive: Published, tmp_path: Path) -> None:
    with fault_proxy(reach_archive.url) as proxy:
        options = {"server": proxy.url, "token": TOKEN, "cache_dir": str(tmp_path / "cache")}
        fs = ArkFileSystem(skip_instance_cache=True, **options)
        try:
            proxy.inject("flip", "xorb")
            with pytest.raises(OSError, match=r"hash|verif|mismatch|corrupt") as caught:
                fs.cat_file(f"{A}/data/big.bin")
            assert "\n" not in str(caught.value)
        finally:
            fs.client.close()
