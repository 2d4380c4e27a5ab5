"""readdir's rows (Attributes.rows, made in columns at opendir, one EntryAttributes filled
for them all) give each entry exactly what lookup and getattr give it (_of_entry), and
stop where the kernel's buffer fills up."""

from typing import cast

import pyfuse3
import pytest

from arkfs.archive.manifest import Entries, Entry, Kind
from arkfs.archive.record import Archive
from arkfs.ark.normalization import parse
from arkfs.backend.base import Backend
from arkfs.mount.fuse.attributes import TIMEOUT, Attributes, Ownership
from arkfs.mount.names.indexed import Children, IndexedArchive, Positions
from arkfs.mount.names.namespace import InodeTable, Namespace

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

BASE = 3 << 32
LATEST_LEFT = 42.0  # seconds until the latest version is checked again
FIELDS = (
    "st_ino",
    "st_mode",
    "st_nlink",
    "st_uid",
    "st_gid",
    "st_size",
    "st_blksize",
    "st_blocks",
    "st_atime_ns",
    "st_ctime_ns",
    "st_mtime_ns",
    "attr_timeout",
    "entry_timeout",
    "generation",
)
XET = bytes(range(32))


def _archive() -> IndexedArchive:
    """Directories at two levels, files (one a hard link pair), a symlink, a name that is
    not UTF-8, mtimes before 1970 and odd modes."""
    listed = [
        Entry("a", Kind.DIR, 0, 0o750, -1_500_000_000_123_456_789),
        Entry("a/b", Kind.DIR, 0, 0o755, 5),
        Entry("a/b/deep", Kind.FILE, 513, 0o4755, 7, XET),
        Entry("a/c", Kind.DIR, 0, 0o700, 6),
        Entry("a/f", Kind.FILE, 0, 0o644, 1_700_000_000_123_456_789, XET),
        Entry("a/link", Kind.SYMLINK, 0, 0o777, 8, target="b/deep"),
        Entry("a/x\udcff", Kind.FILE, 4096, 0o600, 9, XET),
        Entry("h1", Kind.FILE, 10, 0o644, 11, XET, link="h1"),
        Entry("h2", Kind.FILE, 10, 0o644, 11, XET, link="h1"),
        Entry("top", Kind.FILE, 1, 0o444, 12, XET),
    ]
    entries = Entries.of(listed)
    subdirs: dict[str, int] = {}
    for path in entries.directories():
        parent = path.rpartition("/")[0]
        subdirs[parent] = subdirs.get(parent, 0) + 1
    return IndexedArchive(
        parse("ark:99999/rows"),
        cast(Archive, None),
        entries,
        cast(Backend, None),
        Positions(entries),
        Children(entries),
        subdirs,
        "",
    )


class _Latest:
    def time_left(self, key: str) -> float:
        return LATEST_LEFT


def _attributes() -> Attributes:
    ns = cast(Namespace, type("NS", (), {"latest": _Latest()})())
    return Attributes(ns, Ownership(1234, 5678, umask=0o022))


def _replied(
    monkeypatch: pytest.MonkeyPatch, room: int = 1 << 30
) -> list[tuple[bytes, int, dict[str, object]]]:
    """Every (name, offset, attributes) readdir_reply gets, until room rows were taken."""
    got: list[tuple[bytes, int, dict[str, object]]] = []

    def reply(token: object, name: bytes, attrs: pyfuse3.EntryAttributes, offset: int) -> bool:
        if len(got) >= room:
            return False
        got.append((name, offset, {f: getattr(attrs, f) for f in FIELDS}))  # a copy, as C does
        return True

    monkeypatch.setattr(pyfuse3, "readdir_reply", reply)
    return got


@pytest.mark.parametrize("pinned", [False, True])
@pytest.mark.parametrize("directory", ["", "a", "a/b", "a/c"])
def test_rows_are_what_getattr_gives(
    monkeypatch: pytest.MonkeyPatch, directory: str, pinned: bool
) -> None:
    archive, attributes = _archive(), _attributes()
    view = InodeTable().view(BASE, "99999", "ark:99999/rows", archive, pinned)
    positions = list(archive.children.get(directory))
    names = archive.entries.child_names(directory, positions)
    positions = [archive.entries.inode_position(p) for p in positions]  # as listing() does
    rows = attributes.rows(view, positions, names)
    got = _replied(monkeypatch)

    timeout = attributes.entry_timeout(view, positions)
    assert rows.reply(cast(pyfuse3.ReaddirToken, None), 0, 3, timeout) == len(positions)

    follows = directory == "" and not pinned  # names in the archive root follow the latest
    assert timeout == (LATEST_LEFT if follows and positions else TIMEOUT)
    assert [(n, o) for n, o, _ in got] == [
        (archive.entries.file_name(p), i + 3) for i, p in enumerate(archive.children.get(directory))
    ]
    for (_, _, row), position in zip(got, positions, strict=True):
        expected = attributes._of_entry(BASE + 1 + position, archive, position)
        expected.entry_timeout = timeout
        assert row == {f: getattr(expected, f) for f in FIELDS}
    if directory == "":
        hard = [row for name, _, row in got if name in (b"h1", b"h2")]
        assert hard[0] == hard[1] and hard[0]["st_nlink"] == 2  # one inode, two links


def test_rows_stop_where_the_buffer_fills_and_resume_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    archive, attributes = _archive(), _attributes()
    view = InodeTable().view(BASE, "99999", "ark:99999/rows", archive, True)
    positions = list(archive.children.get("a"))
    rows = attributes.rows(view, positions, archive.entries.child_names("a", positions))
    token = cast(pyfuse3.ReaddirToken, None)

    first = _replied(monkeypatch, room=2)
    assert rows.reply(token, 0, 3, TIMEOUT) == 2
    rest = _replied(monkeypatch)
    assert rows.reply(token, 2, 3, TIMEOUT) == len(positions)
    assert [n for n, _, _ in first + rest] == [b"b", b"c", b"f", b"link", b"x\xff"]
    assert [o for _, o, _ in first + rest] == [3, 4, 5, 6, 7]
