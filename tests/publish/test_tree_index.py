"""The tree index and reads that notice a file changing under them (fast, no server)."""

import io
import os
import time
from pathlib import Path

import msgpack
import pytest
import trio

from arkfs.ark.erc import Erc
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.cli.target import latest
from arkfs.publish import index as index_module
from arkfs.publish import publisher
from arkfs.publish.index import RACY_NS, Known, StatKey, TreeIndex, index_path
from arkfs.publish.publisher import STABLE_TRIES, PublishError, _digest_small, publish_tree
from arkfs.publish.scan import scan
from arkfs.store.local import LocalStore
from arkfs.xet.digest import FileHasher


class _Changing(io.FileIO):
    """A real file that a writer appends to just after each of its first reads."""

    def __init__(self, path: Path, changes: list[int]) -> None:
        super().__init__(path, "rb")
        self.path, self.changes = path, changes

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        if self.changes[0] > 0:
            self.changes[0] -= 1
            with open(self.path, "ab") as w:
                w.write(b"+")
        return data


def _changing(monkeypatch: pytest.MonkeyPatch, changes: list[int]) -> None:
    """Open every tree file as a _Changing one."""
    monkeypatch.setattr(publisher, "open_source", lambda path: _Changing(Path(path), changes))


def _digest(data: bytes) -> bytes:
    hasher = FileHasher()
    hasher.update(data)
    return hasher.finish()[1].file_hash


def test_a_file_changed_while_read_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "f").write_bytes(b"before")
    path = str(tmp_path / "f")
    _changing(monkeypatch, [1])  # one write lands during the first read
    [(_, digest, key, _)] = _digest_small([path])
    assert (tmp_path / "f").read_bytes() == b"before+"
    assert digest.file_hash == _digest(b"before+") and digest.size == 7
    assert key == StatKey.of(os.stat(path))


def test_a_file_that_keeps_changing_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "f").write_bytes(b"x")
    path = str(tmp_path / "f")
    _changing(monkeypatch, [STABLE_TRIES])
    with pytest.raises(PublishError, match="changed while it was read"):
        _digest_small([path])


def test_index_is_kept_per_target_and_trusts_only_an_exact_old_stat(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    assert index_path("http://a", tree) != index_path("http://b", tree)
    where = tmp_path / "idx.msgpack"
    (tmp_path / "idx.json").write_text('{"format": 1}')  # the index before format 2
    key = StatKey(5, 10, 20, 7)
    known = Known(b"\1" * 32, b"\2" * 32)
    index = TreeIndex(where)
    index.record("old", key, known, read_began_ns=20 + RACY_NS + 1)
    index.record("racy", key, known, read_began_ns=20 + RACY_NS)  # ctime too close to the read
    index.save()
    assert not list(tmp_path.glob("*.tmp")) and not (tmp_path / "idx.json").exists()
    again = TreeIndex(where)
    assert again.lookup("old", key) == known
    assert again.lookup("racy", key) is None
    assert again.lookup("old", StatKey(5, 10, 21, 7)) is None
    where.write_text("{not msgpack")
    assert TreeIndex(where).lookup("old", key) is None


def test_a_saved_index_is_written_in_parts_that_load_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """save writes the index a few rows at a time (SAVE_ROWS), and it loads back whole."""
    monkeypatch.setattr(index_module, "SAVE_ROWS", 3)
    path = tmp_path / "index.msgpack"
    saved = TreeIndex(path)
    keys = {f"d/é{i}": StatKey(i, i, i, i) for i in range(10)}
    for rel, key in keys.items():
        saved.record(rel, key, Known(bytes([len(rel)]) * 32, bytes(32)), key.ctime_ns + RACY_NS + 1)
    rows = {rel.encode(): row for rel, row in saved._rows()}
    saved.save()
    loaded = TreeIndex(path)
    assert all(loaded.lookup(rel, key) is not None for rel, key in keys.items())
    document = {"format": index_module.FORMAT, "files": rows}
    assert path.read_bytes() == msgpack.packb(document, use_bin_type=True)


def test_a_first_version_does_not_load_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first publish of an ARK cannot trust any row (none agrees with a previous
    version), so the tree's index, however large, is not read; a republish reads it."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a").write_bytes(b"one file\n")
    os.utime(tree / "a", ns=(1, 1))
    loads: list[Path] = []
    real_load = index_module._load

    def load(path: Path) -> dict[str, bytes]:
        loads.append(path)
        return real_load(path)

    monkeypatch.setattr(index_module, "_load", load)
    where = tmp_path / "index.msgpack"

    async def main() -> None:
        backend = EmbeddedBackend(LocalStore.open(tmp_path / "store"))
        erc = Erc(who="w", what="x", when="2026", where="ark:12345/x6one")
        try:
            for ark in ("ark:12345/x6one", "ark:12345/x6two", "ark:12345/x6two"):
                previous, scanned = await latest(backend, ark), scan(tree)  # found is used up
                await publish_tree(
                    backend, ark, scanned.found, erc, previous=previous,
                    root=scanned.root, tree_index=TreeIndex(where), allow_empty=True,
                )  # fmt: skip
        finally:
            await backend.aclose()

    time.sleep(2 * RACY_NS / 1e9)  # not a timing assert: the index records settled files
    trio.run(main)
    assert where.exists() and loads == [where]  # only the third, a second version, read it
