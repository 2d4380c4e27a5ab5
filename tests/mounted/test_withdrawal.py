"""Withdrawal: `arkfs withdraw ARK --reason TEXT` makes every version's content 410 Gone,
keeps `?info`, empties the archive in the mount; publishing again reinstates it (issue 27)."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cli import ARKFS, run_arkfs
from tests.support.mount import arkfs_mount
from tests.support.server import arkfs_server

ARK = "ark:99999/x6gone1"
REASON = "court order 12/345"
PERSISTENCE = "kept for ten years by the test library"
TOKENS = "r3ader read\nd3pt write:99999/x6\n0ther write:99999/b2\n"
READ = {"Authorization": "Bearer r3ader"}


def _publish(url: str, tree: Path) -> None:
    done = run_arkfs(
        "publish", str(tree), "--ark", ARK, "--server", url, "--token", "d3pt",
        "--who", "Test Library", "--what", "A dataset", "--persistence", PERSISTENCE,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def _withdraw(url: str, token: str) -> subprocess.CompletedProcess[str]:
    return run_arkfs("withdraw", ARK, "--reason", REASON, "--server", url, "--token", token)


@pytest.fixture(scope="module")
def withdrawn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Two versions of ARK, then its withdrawal (v3) by a token of its shoulder."""
    root = tmp_path_factory.mktemp("withdrawal")
    (root / "tokens").write_text(TOKENS)
    tree = root / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.txt").write_text("first\n")
    (tree / "sub" / "b.txt").write_text("inner\n")
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        _publish(url, tree)
        (tree / "a.txt").write_text("second\n")
        _publish(url, tree)
        refused = _withdraw(url, "0ther")
        assert refused.returncode == 1 and "ark:99999/x6" in refused.stderr, refused.stderr
        assert httpx.get(f"{url}/{ARK}/a.txt", headers=READ).status_code == 200
        done = _withdraw(url, "d3pt")
        assert done.returncode == 0 and "v3" in done.stdout, done.stderr
        yield url, tree


@pytest.mark.parametrize(
    "path",
    [
        "/a.txt",
        "/sub/b.txt",
        "/sub",
        "/@v1/a.txt",
        "/@v2/sub/b.txt",
        "/@v1",
        "?tar",
        "/@v2?linkset",
        "",
    ],
)
def test_every_version_s_content_is_gone_with_the_record_and_reason(
    withdrawn: tuple[str, Path], path: str
) -> None:
    url, _ = withdrawn
    text = httpx.get(f"{url}/{ARK}{path}", headers=READ | {"Accept": "text/plain"})
    assert text.status_code == 410
    assert REASON in text.text and PERSISTENCE in text.text and "A dataset" in text.text
    page = httpx.get(f"{url}/{ARK}{path}", headers=READ | {"Accept": "text/html"})
    assert page.status_code == 410 and REASON in page.text and PERSISTENCE in page.text


@pytest.mark.parametrize("path", ["", "/@v1", "/@v2/a.txt"])
def test_info_keeps_answering_with_the_record_and_the_reason(
    withdrawn: tuple[str, Path], path: str
) -> None:
    url, _ = withdrawn
    info = httpx.get(f"{url}/{ARK}{path}?info", headers=READ)
    assert info.status_code == 200 and REASON in info.text and "A dataset" in info.text
    record = httpx.get(f"{url}/{ARK}{path}?info&format=json", headers=READ).json()
    assert record["erc"]["erc-support"]["withdrawn-reason"] == REASON


def test_the_mount_shows_the_archive_empty_with_its_record(
    withdrawn: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = withdrawn
    args = ("--server", url, "--token", "r3ader", "--cache-dir", str(tmp_path / "cache"))
    with arkfs_mount(tmp_path / "mnt", *args) as m:
        folder = m.path / ARK
        assert os.listdir(folder) == []
        assert REASON in os.getxattr(folder, "user.ark.withdrawn").decode()
        assert PERSISTENCE in os.getxattr(folder, "user.ark.erc").decode()
        record = (folder.parent / (folder.name + "?info")).read_text()
        assert REASON in record and PERSISTENCE in record
        for older in ("@v1", "@v2"):  # the versions it covers are empty too, and say why
            assert os.listdir(folder / older) == []
            assert REASON in os.getxattr(folder / older, "user.ark.withdrawn").decode()


def test_publishing_again_reinstates_it_as_a_new_version(withdrawn: tuple[str, Path]) -> None:
    url, tree = withdrawn
    (tree / "a.txt").write_text("reinstated\n")
    _publish(url, tree)
    try:
        assert httpx.get(f"{url}/{ARK}/a.txt", headers=READ).text == "reinstated\n"
        latest = httpx.get(f"{url}/{ARK}?info&format=json", headers=READ).json()
        assert latest["version"]["version"] == 4
        assert "withdrawn" not in latest["erc"].get("erc-support", {})
        assert httpx.get(f"{url}/{ARK}/@v2/a.txt", headers=READ).status_code == 410
    finally:
        assert _withdraw(url, "d3pt").returncode == 0  # as the other tests expect it


def test_withdraw_works_on_the_embedded_store_and_says_so_twice(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "f").write_text("x\n")
    store = str(tmp_path / "store")
    done = run_arkfs("publish", str(tmp_path / "tree"), "--ark", ARK, "--store", store)
    assert done.returncode == 0, done.stderr
    first = subprocess.run(
        [ARKFS, "withdraw", ARK, "--reason", REASON, "--store", store],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert first.returncode == 0 and "v2" in first.stdout, first.stderr
    again = run_arkfs("withdraw", ARK, "--reason", REASON, "--store", store)
    assert again.returncode == 0 and "already withdrawn" in again.stdout
    # the embedded mount shows v1 as the server does: empty, with the withdrawal
    with arkfs_mount(tmp_path / "mnt", "--store", store, "--cache-dir", str(tmp_path / "c")) as m:
        older = m.path / ARK / "@v1"
        assert os.listdir(older) == [] and not (older / "f").exists()
        assert REASON in os.getxattr(older, "user.ark.withdrawn").decode()
