"""File names with hyphens: normalization drops them, so the resolver finds the entry the
raw path spells and redirects to its canonical ARK. Bound with `arkfs bind`, as a user would."""

import json
from collections.abc import Iterator

import httpx
import pytest

from arkfs.ark.erc import Erc
from tests.support.cli import run_arkfs
from tests.support.hfxet import upload_files
from tests.support.server import arkfs_server

ARK = "ark:12345/x6lit"
READ = {"Authorization": "Bearer r"}
FILES = {
    "data/2024-01-01.csv": b"date,value\n2024-01-01,7\n",
    "const-7.bin": b"\x07" * 5000,
}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("literal")
    (root / "tokens").write_text("r read\nw write\n")
    paths = []
    for i, data in enumerate(FILES.values()):
        paths.append(root / f"f{i}")
        paths[-1].write_bytes(data)
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        infos = upload_files(url, paths, token="w")
        listing = root / "files.json"
        entries = [
            {"path": path, "hash": info.hash, "size": info.file_size}
            for path, info in zip(FILES, infos, strict=True)
        ]
        listing.write_text(json.dumps(entries))
        out = run_arkfs("bind", ARK, "--manifest", str(listing), "--server", url, "--token", "w")
        assert out.returncode == 0, out.stderr
        yield url


def get(url: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.get(url + path, headers=READ, timeout=30, **kwargs)  # type: ignore[arg-type]


def test_a_hyphenated_name_redirects_to_its_canonical_ark(url: str) -> None:
    for typed, canonical in [
        ("data/2024-01-01.csv", "data/2024%2D01%2D01%2Ecsv"),
        ("const-7.bin", "const%2D7%2Ebin"),
        ("const%2D7.bin", None),  # the canonical form itself
    ]:
        r = get(url, f"/{ARK}/{typed}")
        if canonical is None:
            assert r.status_code == 200, typed
            continue
        assert r.status_code == 301, (typed, r.text)
        assert r.headers["location"] == f"/{ARK}/{canonical}"
        followed = get(url, f"/{ARK}/{typed}", follow_redirects=True)
        assert followed.content == FILES[typed], typed


def test_info_keeps_its_query_through_the_redirect(url: str) -> None:
    r = get(url, "/ark:/12345/x6-lit/data/2024-01-01.csv?info&format=json")
    assert r.status_code == 301
    assert r.headers["location"] == f"/{ARK}/data/2024%2D01%2D01%2Ecsv?info&format=json"
    r = get(url, f"/{ARK}/data/2024-01-01.csv?info", follow_redirects=True)
    assert r.status_code == 200 and r.headers["thump-status"] == "0.6 200 OK"
    assert Erc.from_anvl(r.text).where == f"{ARK}/data/2024%2D01%2D01%2Ecsv"


def test_a_version_path_redirects_within_its_version(url: str) -> None:
    r = get(url, "/ark:/12345/x6-lit/@v1/data/2024-01-01.csv?info")
    assert r.status_code == 301
    assert r.headers["location"] == f"/{ARK}/@v1/data/2024%2D01%2D01%2Ecsv?info"
    followed = get(url, f"/{ARK}/@v1/const-7.bin", follow_redirects=True)
    assert followed.content == FILES["const-7.bin"]
    assert get(url, f"/{ARK}/@v2/const-7.bin").status_code == 404  # no such version


def test_what_no_spelling_names_is_still_404(url: str) -> None:
    for path in ("data/2024-01-02.csv", "const-8.bin", "data/%2E%2E/const-7.bin"):
        r = get(url, f"/{ARK}/{path}")
        assert r.status_code in (400, 404), (path, r.status_code)
        assert r.text.count("\n") == 1
