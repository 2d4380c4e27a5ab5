"""A file name that is not UTF-8 (latin-1 `caf\\xe9.txt`) through a real `arkfs serve`: its
bytes, its `?info` record, the landing pages, the directory listing, the JSON manifest and
the tar download all answer, as UTF-8 text where they are text, and lose no byte of the name
(issue 24, point 3)."""

import io
import json
import os
import tarfile
from pathlib import Path

import httpx

from arkfs.ark.erc import Erc
from tests.support.archive import publish
from tests.support.server import arkfs_server

ARK = "ark:12345/n4m3s"
LATIN1 = b"caf\xe9.txt"
NAME = os.fsdecode(LATIN1)


def test_a_non_utf8_name_is_served_everywhere(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    os.mkdir(os.fsencode(tree) + b"/d\xe9r")
    for where in (b"", b"d/", b"d\xe9r/"):
        with open(os.fsencode(tree) + b"/" + where + LATIN1, "wb") as f:
            f.write(b"latin-1 name\n")
    publish(tree, ARK, "--store", str(tmp_path / "store"))
    with (
        arkfs_server(tmp_path / "store", "--open-read") as (url, _),
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        file_url = f"/{ARK}/d/caf%E9%2Etxt"
        got = http.get(file_url)
        assert got.status_code == 200 and got.content == b"latin-1 name\n"
        info = http.get(file_url + "?info")
        assert info.status_code == 200
        erc = Erc.from_anvl(info.content.decode("utf-8"))
        assert erc.where == f"{ARK}/d/caf%E9%2Etxt" and erc.what is not None
        assert erc.what.endswith("d/caf%E9.txt")
        for page, accept in (
            (f"/{ARK}", "text/html"),
            (f"/{ARK}/d", "text/html"),
            (file_url + "?info", "text/html"),
            (file_url + "?info", "application/json"),
        ):
            got = http.get(page, headers={"Accept": accept})
            assert got.status_code == 200, (page, got.text[:300])
            assert "caf%E9" in got.content.decode("utf-8"), page
        manifest = http.get(f"/{ARK}", headers={"Accept": "application/json"})
        assert manifest.status_code == 200
        paths = {e["path"] for e in manifest.json()["entries"]}
        assert {NAME, f"d/{NAME}"} <= paths  # JSON's \udcXX escapes: the bytes, back
        assert json.loads(manifest.content) == manifest.json()
        tar = http.get(f"/{ARK}?tar")
        assert tar.status_code == 200
        with tarfile.open(fileobj=io.BytesIO(tar.content), encoding="utf-8") as t:
            names = {os.fsencode(n.split("/", 1)[1]) for n in t.getnames() if "/" in n}
        assert {LATIN1, b"d/" + LATIN1} <= names
        tar = http.get(f"/{ARK}/d%E9r?tar")  # a directory's tar is named after it
        assert tar.status_code == 200, tar.text[:300]
        assert "d%E9r.tar" in tar.headers["Content-Disposition"]
        with tarfile.open(fileobj=io.BytesIO(tar.content), encoding="utf-8") as t:
            assert [os.fsencode(n) for n in t.getnames()] == [b"d\xe9r", b"d\xe9r/" + LATIN1]
