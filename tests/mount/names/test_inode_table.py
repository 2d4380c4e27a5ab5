"""The inode table's readdir path: listed entries are held as counts in their version view,
and an entry's Node is made, with the count, only when its inode is asked for."""

from typing import cast

import pyfuse3
import pytest

from arkfs.archive.manifest import Entries, Entry, Kind
from arkfs.archive.record import Archive
from arkfs.ark.normalization import parse
from arkfs.backend.base import Backend
from arkfs.mount.names.indexed import Children, IndexedArchive, Positions
from arkfs.mount.names.namespace import InodeTable, NodeKind

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

BASE = 7 << 32
FILES = 1000


def archive() -> IndexedArchive:
    """An archive of FILES files in one directory (only its entries are used here)."""
    listed = [Entry("d", Kind.DIR, 0, 0o755, 0)]
    listed += [Entry(f"d/f{i:04}", Kind.FILE, 1, 0o644, 0, bytes(32)) for i in range(FILES)]
    entries = Entries.of(listed)
    return IndexedArchive(
        parse("ark:99999/t"),
        cast(Archive, None),
        entries,
        cast(Backend, None),
        Positions(entries),
        Children(entries),
        {},
        "",
    )


def test_listed_entries_are_counted_and_made_only_when_asked_for() -> None:
    table = InodeTable()
    view = table.view(BASE, "99999", "ark:99999/t", archive(), False)
    for _ in range(2):  # two readdirplus of the directory: two lookups each
        for i in range(1, FILES + 1):
            table.remember_entry(view, i)
    assert (len(table), table.entries) == (2 + FILES, FILES)

    node = table.get(BASE + 1 + 5)  # made now, for a getattr
    assert (node.kind, node.index, node.path, node.lookups) == (NodeKind.ENTRY, 5, "d/f0004", 2)
    assert table.get(BASE + 1 + 5) is node
    table.remember_entry(view, 5)  # a third readdirplus counts on the node
    table.forget(BASE + 1 + 5, 2)
    assert table.get(BASE + 1 + 5).lookups == 1
    table.forget(BASE + 1 + 5, 1)
    with pytest.raises(pyfuse3.FUSEError):
        table.get(BASE + 1 + 5)

    table.forget(BASE + 1 + 6, 1)  # a count not made a Node: kept until it reaches zero
    assert table.get(BASE + 1 + 6).lookups == 1
    for i in range(1, FILES + 1):
        table.forget(BASE + 1 + i, 2)
    assert (len(table), table.entries) == (2, 0)
    with pytest.raises(pyfuse3.FUSEError):
        table.get(BASE + 1 + 0)  # the directory was never listed: not live
