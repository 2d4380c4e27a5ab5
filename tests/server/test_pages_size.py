"""A landing page stays small however many files its archive holds: past LISTED_DOWNLOADS
files, its JSON-LD offers the tar alone."""

import json
import re
from pathlib import Path
from typing import Any

import httpx

from arkfs.server.pages import LISTED_DOWNLOADS
from tests.support.archive import publish
from tests.support.server import arkfs_server

ARK = "ark:b5072/m4ny"


def json_ld(url: str) -> dict[str, Any]:
    """The schema.org JSON-LD of the landing page at url."""
    r = httpx.get(url, headers={"Accept": "text/html"}, timeout=60)
    assert r.status_code == 200, r.text
    found = re.search(r'<script type="application/ld\+json">(.*?)</script>', r.text, re.S)
    assert found is not None
    ld: dict[str, Any] = json.loads(found[1])
    return ld


def test_a_big_archive_lists_only_its_tar_and_a_small_directory_every_file(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    (tree / "many").mkdir(parents=True)
    for i in range(LISTED_DOWNLOADS + 1):
        (tree / "many" / f"f{i}").write_bytes(b"%d\n" % i)
    (tree / "few").mkdir()
    (tree / "few" / "a.txt").write_bytes(b"a\n")
    (tmp_path / "tokens").write_text("w write\n")
    serve = ("--tokens", str(tmp_path / "tokens"), "--open-read")
    with arkfs_server(tmp_path / "store", *serve) as (url, _):
        publish(tree, ARK, "--server", url, "--token", "w")
        root = json_ld(f"{url}/{ARK}")
        assert [d["name"] for d in root["distribution"]] == ["all files (tar)"]
        few = json_ld(f"{url}/{ARK}/few")
        assert [d["name"] for d in few["distribution"]] == ["few/a.txt", "all files (tar)"]
        assert len(json_ld(f"{url}/{ARK}/many")["distribution"]) == 1
