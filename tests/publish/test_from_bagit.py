"""`arkfs publish BAG --from-bagit`: a bag made by the `bagit` package (not by arkfs)
publishes its payload with bag-info.txt as ERC; a bag whose payload does not match its
manifest is refused in one line with exit code 2 and binds nothing."""

from pathlib import Path

import bagit

from tests.support.archive import WHAT, WHO, bound, make_tree, publish
from tests.support.cli import run_arkfs

ARK = "ark:b5072/b4g1n"


def make_bag(root: Path) -> Path:
    """A bag of three files made by bagit-python, with Source-Organization and
    External-Description in bag-info.txt."""
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"alpha\n")
    (root / "sub/b.bin").write_bytes(bytes(range(256)) * 100)
    (root / "empty").write_bytes(b"")
    info = {"Source-Organization": "Lab of Bags", "External-Description": "Bagged tables"}
    bagit.make_bag(str(root), info, checksums=["sha256"])
    return root


def test_a_valid_bag_publishes_its_payload_with_its_erc(tmp_path: Path) -> None:
    bag, store = make_bag(tmp_path / "bag"), tmp_path / "store"
    done = run_arkfs("publish", str(bag), "--from-bagit", "-q", "--ark", ARK, "--store", str(store))
    assert done.returncode == 0, done.stderr
    manifest, erc = bound(store, ARK)
    assert sorted(e.path for e in manifest.files) == ["a.txt", "empty", "sub/b.bin"]
    assert erc.who == "Lab of Bags" and erc.what == "Bagged tables" and erc.where == ARK


def test_a_bag_that_does_not_validate_is_refused_in_one_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    changed = make_bag(tmp_path / "changed")
    (changed / "data/a.txt").write_bytes(b"alphA\n")  # same size: only hashing finds it
    extra = make_bag(tmp_path / "extra")
    (extra / "data/stray.txt").write_bytes(b"not in the manifest\n")
    tags = make_bag(tmp_path / "tags")
    (tags / "bag-info.txt").write_text("Source-Organization: someone else\n")
    for bag, why in ((changed, "SHA-256"), (extra, "stray.txt"), (tags, "bag-info.txt")):
        done = run_arkfs(
            "publish", str(bag), "--from-bagit", "-q", "--ark", ARK, "--store", str(store)
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and why in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    listed = run_arkfs("versions", ARK, "--store", str(store))
    assert listed.returncode != 0  # nothing was bound


def test_an_exported_bag_publishes_back_with_the_same_files_and_erc(tmp_path: Path) -> None:
    src, store = make_tree(tmp_path / "src"), tmp_path / "store"
    publish(src, ARK, "--store", str(store))
    done = run_arkfs("export", "--bagit", ARK, str(tmp_path / "bag"), "--store", str(store))
    assert done.returncode == 0, done.stderr
    again = "ark:b5072/b4g2n"
    done = run_arkfs(
        "publish", str(tmp_path / "bag"), "--from-bagit", "-q", "--ark", again,
        "--store", str(store),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (before, erc_before), (after, erc_after) = bound(store, ARK), bound(store, again)
    assert [(e.path, e.sha256) for e in before.files] == [(e.path, e.sha256) for e in after.files]
    assert (erc_after.who, erc_after.what) == (WHO, WHAT) == (erc_before.who, erc_before.what)
    assert erc_after.where == again
