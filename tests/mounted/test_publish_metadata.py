"""Rich metadata and metadata-only versions, on the embedded store and on `arkfs serve`."""

import json
import os
import re
from pathlib import Path

import httpx
import pytest

from arkfs.ark.erc import Erc
from arkfs.ark.errors import ErcError
from arkfs.ark.metadata import check_orcid, parse_creator, parse_related
from arkfs.backend.remote import MANIFEST_TYPE
from arkfs.server.pages import rich_json_ld
from tests.publish.test_publish_incremental import ARK, make_tree, publish, snapshot
from tests.support.cli import run_arkfs
from tests.support.mount import arkfs_mount
from tests.support.targets import WRITE
from tests.support.targets import target as target

ORCID = "0000-0002-1825-0097"  # ORCID's own example iD


def rich_options(tmp_path: Path) -> list[str]:
    (tmp_path / "about.txt").write_text("Sine tables to twelve digits.\n")
    return [
        "--license", "cc-by-4.0",
        "--description", f"@{tmp_path / 'about.txt'}",
        "--keyword", "trigonometry", "--keyword", "tables",
        "--creator", f"Ada Lovelace; {ORCID}; Analytical Society",
        "--creator", "Charles Babbage",
        "--related", "IsSupplementTo=doi:10.5061/dryad.x",
        "--related", "isderivedfrom=ark:12345/x6older",
    ]  # fmt: skip


def erc_of(where: list[str], store: Path, version: int) -> Erc:
    """The ERC of a version, as `?info` serves it (server) or the store keeps it."""
    if where[0] == "--server":
        r = httpx.get(
            f"{where[1]}/{ARK}/@v{version}?info", headers={"Authorization": f"Bearer {WRITE}"}
        )
        r.raise_for_status()
        return Erc.from_anvl(r.text)
    from arkfs.store.local import LocalStore

    with LocalStore.open(store, create=False) as s:
        return Erc.from_anvl(s.get_binding(ARK, version).erc)


def manifest_of(where: list[str], store: Path, version: int) -> bytes:
    """The manifest of a version as the server serves it, or the store keeps it."""
    if where[0] == "--server":
        r = httpx.get(
            f"{where[1]}/{ARK}/@v{version}",
            headers={"Authorization": f"Bearer {WRITE}", "Accept": MANIFEST_TYPE},
        )
        r.raise_for_status()
        return r.content
    from arkfs.store.local import LocalStore

    with LocalStore.open(store, create=False) as s:
        return s.get_binding(ARK, version).manifest


def test_metadata_only_version_reads_and_uploads_nothing(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    where, store = target
    tree = make_tree(tmp_path / "tree")
    first = publish(tree, where)
    data_before = {k: v for k, v in snapshot(store).items() if ".sqlite" not in k}
    out = run_arkfs("publish", "--ark", ARK, *where, *rich_options(tmp_path), "--json", "-q")
    assert out.returncode == 0, out.stderr
    v2 = json.loads(out.stdout)
    assert (v2["version"], v2["follows"], v2["changed"]) == (2, 1, True)
    assert v2["uploaded_bytes"] == 0 and v2["read_bytes"] == 0
    assert (v2["files"], v2["bytes"]) == (first["files"], first["bytes"])
    assert {k: v for k, v in snapshot(store).items() if ".sqlite" not in k} == data_before
    assert manifest_of(where, store, 2) == manifest_of(where, store, 1)  # bound again, as stored
    erc = erc_of(where, store, 2)
    assert ("license", "CC-BY-4.0") in erc.other
    assert ("creator", f"Ada Lovelace; {ORCID}; Analytical Society") in erc.other
    assert [v for k, v in erc.other if k == "keyword"] == ["trigonometry", "tables"]
    assert ("related", "IsDerivedFrom=ark:12345/x6older") in erc.other
    assert ("description", "Sine tables to twelve digits.") in erc.other
    history = run_arkfs("versions", ARK, *where, "--json")
    latest = json.loads(history.stdout)["versions"][-1]
    assert latest["added"] == latest["removed"] == latest["changed"] == []
    assert "license" in latest["metadata"] and "creator" in latest["metadata"]
    assert latest["message"].startswith("metadata change")
    text = run_arkfs("versions", ARK, *where).stdout
    assert "metadata change only: " in text
    if where[0] == "--server":  # the landing page's versions table says so too
        page = httpx.get(f"{where[1]}/{ARK}", headers={"Authorization": f"Bearer {WRITE}"})
        assert "metadata change (" in page.text
    # Carried forward: a later publish of the tree keeps it; the same metadata again is no change.
    (tree / "top.csv").write_text("x,y\n1,3\n")
    assert publish(tree, where)["version"] == 3
    assert ("license", "CC-BY-4.0") in erc_of(where, store, 3).other
    again = run_arkfs("publish", "--ark", ARK, *where, "--license", "CC-BY-4.0", "--json")
    assert json.loads(again.stdout)["changed"] is False


@pytest.mark.parametrize(
    "option",
    [
        ["--license", "Not-A-Licence-1.0"],
        ["--creator", "Ada Lovelace; 0000-0002-1825-0098"],
        ["--related", "IsFriendOf=doi:10.1/x"],
    ],
)
def test_invalid_metadata_exits_2_in_one_line(
    tmp_path: Path, target: tuple[list[str], Path], option: list[str]
) -> None:
    where, store = target
    tree = make_tree(tmp_path / "tree")
    for args in (["publish", str(tree)], ["publish"]):
        out = run_arkfs(*args, "--ark", ARK, *where, *option)
        assert out.returncode == 2, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and out.stdout == ""
    assert not (store / "index.sqlite").exists() or "--server" in where


@pytest.mark.parametrize("target", ["serve"], indirect=True)  # the landing page is a server's
def test_landing_page_json_ld_carries_the_rich_metadata(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    where, _ = target
    tree = make_tree(tmp_path / "tree")
    publish(tree, where, *rich_options(tmp_path))
    page = httpx.get(f"{where[1]}/{ARK}", headers={"Authorization": f"Bearer {WRITE}"})
    page.raise_for_status()
    match = re.search(r'<script type="application/ld\+json">(.*?)</script>', page.text, re.S)
    assert match is not None
    ld = json.loads(match[1])
    assert ld["license"] == "https://spdx.org/licenses/CC-BY-4.0"
    assert ld["description"] == "Sine tables to twelve digits."
    assert ld["keywords"] == ["trigonometry", "tables"]
    assert ld["creator"][0] == {
        "@type": "Person",
        "name": "Ada Lovelace",
        "identifier": f"https://orcid.org/{ORCID}",
        "affiliation": {"@type": "Organization", "name": "Analytical Society"},
    }
    assert ld["creator"][1] == {"@type": "Person", "name": "Charles Babbage"}
    assert ld["isBasedOn"] == ["ark:12345/x6older"]
    assert ld["citation"] == ["doi:10.5061/dryad.x"]
    assert "CC-BY-4.0" in page.text and "Analytical Society" in page.text


def test_erc_file_rights_and_subject_reach_the_json_ld() -> None:
    erc = Erc.from_anvl(
        "erc:\nwho: Lab\nwhat: Tables\nrights: Public domain\nsubject: sines\nsubject: cosines\n"
    )
    ld = rich_json_ld(erc)
    assert ld == {"license": "Public domain", "keywords": ["sines", "cosines"]}


def test_orcid_check_digit_and_parts() -> None:
    assert check_orcid(f"https://orcid.org/{ORCID}") == ORCID
    assert check_orcid("0000-0002-9079-593X") == "0000-0002-9079-593X"
    with pytest.raises(ErcError, match="check digit"):
        check_orcid("0000-0002-9079-5931")
    c = parse_creator("Ada; Analytical Society")
    assert (c.name, c.orcid, c.affiliation) == ("Ada", None, "Analytical Society")
    assert parse_related("issupplementto = doi:1/x") == ("IsSupplementTo", "doi:1/x")


def test_mount_shows_the_rich_metadata_as_attributes(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    where, _ = target
    tree = make_tree(tmp_path / "tree")
    publish(tree, where, *rich_options(tmp_path))
    cache = ["--cache-dir", str(tmp_path / "cache")]
    with arkfs_mount(tmp_path / "mnt", *where, *cache) as m:
        root = m.path / ARK
        assert b"license: CC-BY-4.0" in os.getxattr(root, "user.ark.erc")
        assert os.getxattr(root, "user.ark.license") == b"CC-BY-4.0"
        assert os.getxattr(root, "user.ark.keyword") == b"trigonometry\ntables"
        creators = os.getxattr(root, "user.ark.creator").decode().splitlines()
        assert creators == [f"Ada Lovelace; {ORCID}; Analytical Society", "Charles Babbage"]
