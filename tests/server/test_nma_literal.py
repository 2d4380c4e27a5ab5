"""File names with hyphens: normalization drops them, so the resolver finds the entry the
raw path spells and answers it (200, so `curl --fail -o` saves it) with its canonical ARK as
`Link: rel="cite-as"`. Bound with `arkfs bind`, as a user would."""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

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


def _cite_as(r: httpx.Response) -> str:
    """The URL of the reply's Link rel="cite-as"."""
    for link in r.headers["link"].split(","):
        target, _, params = link.strip().partition(";")
        if 'rel="cite-as"' in params:
            return target.strip().strip("<>")
    raise AssertionError(f"no cite-as in {r.headers['link']}")


def test_a_hyphenated_name_answers_with_its_canonical_ark_as_cite_as(url: str) -> None:
    for typed, canonical in [
        ("data/2024-01-01.csv", "data/2024%2D01%2D01%2Ecsv"),
        ("const-7.bin", "const%2D7%2Ebin"),
        ("const%2D7.bin", "const%2D7%2Ebin"),  # the canonical form itself
    ]:
        r = get(url, f"/{ARK}/{typed}")
        assert r.status_code == 200 and r.content == FILES[typed.replace("%2D", "-")], typed
        assert _cite_as(r) == f"{url}/{ARK}/{canonical}", typed


def test_curl_fail_saves_a_hyphenated_name(url: str, tmp_path: Path) -> None:
    out = tmp_path / "f.csv"
    done = subprocess.run(
        ["curl", "--fail", "-sS", "-H", "Authorization: Bearer r", "-o", str(out),
         f"{url}/{ARK}/data/2024-01-01.csv"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and out.read_bytes() == FILES["data/2024-01-01.csv"]


def test_info_of_a_hyphenated_name_is_its_record(url: str) -> None:
    r = get(url, "/ark:/12345/x6-lit/data/2024-01-01.csv?info&format=json")
    assert r.status_code == 200
    assert _cite_as(r) == f"{url}/{ARK}/data/2024%2D01%2D01%2Ecsv"
    r = get(url, f"/{ARK}/data/2024-01-01.csv?info")
    assert r.status_code == 200 and r.headers["thump-status"] == "0.6 200 OK"
    assert Erc.from_anvl(r.text).where == f"{ARK}/data/2024%2D01%2D01%2Ecsv"


def test_a_version_path_answers_within_its_version(url: str) -> None:
    r = get(url, "/ark:/12345/x6-lit/@v1/data/2024-01-01.csv?info")
    assert r.status_code == 200
    assert _cite_as(r) == f"{url}/{ARK}/@v1/data/2024%2D01%2D01%2Ecsv"
    assert get(url, f"/{ARK}/@v1/const-7.bin").content == FILES["const-7.bin"]
    assert get(url, f"/{ARK}/@v2/const-7.bin").status_code == 404  # no such version


def test_what_no_spelling_names_is_still_404(url: str) -> None:
    for path in ("data/2024-01-02.csv", "const-8.bin", "data/%2E%2E/const-7.bin"):
        r = get(url, f"/{ARK}/{path}")
        assert r.status_code in (400, 404), (path, r.status_code)
        assert r.text.count("\n") == 1
