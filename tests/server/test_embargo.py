"""Embargo: `publish --embargo-until DATE` keeps the content for read tokens until then,
while the archive's `?info` and landing page stay public, even with --open-read (issue 27)."""

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cli import run_arkfs
from tests.support.server import arkfs_server

ARK = "ark:99999/x6emb1"
SECRET = b"not before its day\n"
READ = {"Authorization": "Bearer reader"}


def _publish(url: str, tree: Path, until: str) -> None:
    done = run_arkfs(
        "publish", str(tree), "--ark", ARK, "--server", url, "--token", "w",
        "--what", "An embargoed dataset", "--embargo-until", until,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("embargo")
    (root / "tokens").write_text("reader read\nw write\n")
    tree = root / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "secret.txt").write_bytes(SECRET)
    with arkfs_server(root / "store", "--open-read", "--tokens", str(root / "tokens")) as (
        url,
        _,
    ):
        _publish(url, tree, "2999-01-01")
        yield url, tree


@pytest.mark.parametrize(
    ("path", "accept"),
    [
        ("/sub/secret.txt", "*/*"),
        ("/sub", "application/json"),
        ("", "application/json"),
        ("", "application/vnd.arkfs.manifest+msgpack"),
        ("?tar", "*/*"),
        ("/sub/secret.txt?info", "text/plain"),
        ("/@v1/sub/secret.txt", "*/*"),
    ],
)
def test_content_wants_a_read_token_until_the_date(
    served: tuple[str, Path], path: str, accept: str
) -> None:
    url, _ = served
    anonymous = httpx.get(f"{url}/{ARK}{path}", headers={"Accept": accept})
    assert anonymous.status_code == 401 and SECRET not in anonymous.content
    assert httpx.get(f"{url}/{ARK}{path}", headers=READ | {"Accept": accept}).status_code == 200


def test_the_record_and_landing_page_stay_public_without_the_files(
    served: tuple[str, Path],
) -> None:
    url, _ = served
    info = httpx.get(f"{url}/{ARK}?info")
    assert info.status_code == 200 and "embargo-until: 2999-01-01" in info.text
    page = httpx.get(f"{url}/{ARK}", headers={"Accept": "text/html"})
    assert page.status_code == 200 and "An embargoed dataset" in page.text
    assert "2999-01-01" in page.text and "secret.txt" not in page.text
    full = httpx.get(f"{url}/{ARK}", headers=READ | {"Accept": "text/html"})
    assert full.status_code == 200 and "secret.txt" in full.text
    assert httpx.get(f"{url}/{ARK}/sub/secret.txt", headers=READ).content == SECRET


def test_a_past_date_lifts_the_embargo(served: tuple[str, Path]) -> None:
    url, tree = served
    _publish(url, tree, "2000-01-01")
    assert httpx.get(f"{url}/{ARK}/sub/secret.txt").content == SECRET
    assert httpx.get(f"{url}/{ARK}/@v1/sub/secret.txt").status_code == 401  # v1's own date


def test_a_bad_date_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    done = run_arkfs("publish", str(tmp_path / "t"), "--ark", ARK, "--store",
                     str(tmp_path / "s"), "--embargo-until", "soon")  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--embargo-until" in done.stderr
