"""The mount's inodes: the tree of NAANs, archives and manifest entries, and lookup counts.

    /                          root: one `ark:NAAN` directory per known NAAN
    /ark:/                     hidden: its children are NAANs, for the old `ark:/NAAN/Name`
    /ark:12345/                the Names bound under the NAAN
    /ark:12345/x6np1wh8k/      an archive root: the tree of its latest version
    /ark:12345/x6np1wh8k/@v2/  unlisted: the tree of version 2, as long as the mount runs
    .../NAME?info, NAME??      unlisted files holding NAME's ERC record
    /ark:12345/b7xyz           an ARK found through discovery that is no arkfs archive:
                               unlisted, a read-only file of what it resolves to

Inode numbers are derived, not allocated: each NAAN, archive root and version view gets a
slot when first seen (slot << 32). A version view is one version as the latest shows it,
or as its `@vN` directory does (their ARKs differ: `.../@v2/x`); its `@vN` directory is
the slot's base, entry i of its manifest is base + 1 + i, and the `?info` file of either
sets bit 31 (the `?info` of an archive root is its latest view's). So every version has
inodes of its own, equivalent spellings of an ARK (hyphens, NAAN case, `ark:/`) reach one
inode, and an inode the kernel forgot comes back with the same number. Below an archive's
root a name is exact: only the bytes published name an entry. The table holds a Node only
while the kernel counts lookups of it or a handle is open on it, so memory follows the
kernel's cache, not the tree's size; an entry readdir hands out is held as a 4-byte count
in its version view (EntryView) until its inode is asked for.

The archive root keeps its inode and shows whichever version LatestVersions finds latest.
What the kernel caches of the latest (names in the root, the root's `?info`) it keeps only
until the next check, and when a check finds a new version the namespace tells it to
forget them (invalidate_entry_async; the root's attributes with invalidate_inode), so the
next lookup gets the new version's inodes. An open file keeps its node, and its node its
version: it never reads a mix of two.
"""

import contextlib
import enum
import errno
import logging
import os
from array import array
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import pyfuse3

from arkfs.archive.manifest import Kind, entry_ark
from arkfs.ark.errors import ArkError
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.ark.version_qualifier import version_name, version_of_name, versioned
from arkfs.backend.base import BackendError, NotBound, Unreachable
from arkfs.mount.names.catalog import Catalog
from arkfs.mount.names.indexed import IndexedArchive
from arkfs.mount.names.latest import LatestVersions
from arkfs.resolver.objects import RemoteObject

log = logging.getLogger(__name__)

ROOT_INODE = int(pyfuse3.ROOT_INODE)
LABEL_INODE = ROOT_INODE + 1
LABEL = "ark:"
SLOT_SHIFT = 32
INFO_BIT = 1 << 31
NAME_MAX = 255  # bytes in one name, as Linux's local filesystems allow
INFLECTIONS = ("?info", "??")  # THUMP: `??` is the older spelling of `?info`


class NodeKind(enum.Enum):
    """What an inode stands for."""

    ROOT = "root"
    LABEL = "label"  # the hidden `ark:` directory
    NAAN = "naan"
    ARCHIVE = "archive"  # an archive's root directory: its latest version
    VERSION = "version"  # `ARCHIVE/@vN`, the root of one version
    ENTRY = "entry"  # a manifest entry
    INFO = "info"  # the `?info` file of an archive or entry
    OBJECT = "object"  # an ARK that resolves to something else: a file holding it


@dataclass(eq=False, slots=True)
class Node:
    """One inode. index is the manifest position of an entry, -1 for an archive's or a
    version's root. archive is the version the node shows (for an archive root, the latest
    shown so far); pinned says it was reached through `@vN`, so its ARKs name the version."""

    ino: int
    kind: NodeKind
    naan: str = ""
    key: str = ""  # the archive's normalized ARK
    index: int = -1
    archive: IndexedArchive | None = None  # None until an unfetched archive root is used
    pinned: bool = False
    obj: RemoteObject | None = None  # for an OBJECT node
    lookups: int = 0
    opens: int = 0

    @property
    def is_dir(self) -> bool:
        if self.kind in (
            NodeKind.ROOT,
            NodeKind.LABEL,
            NodeKind.NAAN,
            NodeKind.ARCHIVE,
            NodeKind.VERSION,
        ):
            return True
        return self.kind is NodeKind.ENTRY and self.entry_kind is Kind.DIR

    @property
    def entry_kind(self) -> Kind | None:
        """The manifest kind of an entry node, else None."""
        if self.kind is not NodeKind.ENTRY or self.archive is None:
            return None
        return self.archive.entries.kind(self.index)

    @property
    def path(self) -> str:
        """The manifest path of an archive or entry node ('' for the archive root)."""
        if self.index < 0 or self.archive is None:
            return ""
        return self.archive.entry(self.index).path

    @property
    def root_ark(self) -> Ark | None:
        """The ARK of the root this node is under: the archive's, or its version's."""
        if self.archive is None:
            return None
        return versioned(self.archive.ark, self.archive.version if self.pinned else None)

    @property
    def ark(self) -> Ark | None:
        """The ARK this node (or, for an INFO node, its subject) stands for."""
        root = self.root_ark
        return None if root is None else entry_ark(root, self.path)

    @property
    def follows_latest(self) -> bool:
        """Does the kernel reach this node by a name whose meaning moves to the next
        version (a name in the archive root, or the root's `?info`)? Those are cached
        only until the latest version is checked again."""
        if self.pinned or self.kind not in (NodeKind.ENTRY, NodeKind.INFO):
            return False
        return self.index < 0 or self.archive is None or self.archive.entries.at_top(self.index)


@dataclass(eq=False, slots=True)
class EntryView:
    """One version view's entries as readdir hands them out: no Node each, only a lookup
    count per manifest position (4 bytes an entry); InodeTable makes an entry's Node when
    it is asked for by inode, so memory and time per listed entry stay small."""

    base: int  # the view's slot base: entry i is inode base + 1 + i
    naan: str
    key: str
    archive: IndexedArchive
    pinned: bool
    counts: "array[int]"


@dataclass(frozen=True)
class Listing:
    """A directory's children as readdir sees them: names (bytes, as the kernel gets them),
    and a maker of each child; for a directory of an archive, its view and the manifest
    position (its inode's) of each child instead."""

    names: list[bytes]
    make: Callable[[int], Node]
    view: EntryView | None = None
    positions: Sequence[int] = ()


class InodeTable:
    """The live inodes: a Node is held while the kernel counts lookups of it or a handle
    is open on it; an entry handed out by readdir is held as a count in its EntryView
    until its Node is asked for."""

    def __init__(self) -> None:
        self._nodes: dict[int, Node] = {
            ROOT_INODE: Node(ROOT_INODE, NodeKind.ROOT, lookups=1),
            LABEL_INODE: Node(LABEL_INODE, NodeKind.LABEL, lookups=1),
        }
        self._views: dict[int, EntryView] = {}  # slot base -> its view's counts
        self._counted = 0  # entries held as a count in a view, not as a Node
        self.entries = 0  # how many live inodes are manifest entries (statfs counts them)

    def __len__(self) -> int:
        return len(self._nodes) + self._counted

    def view(
        self, base: int, naan: str, key: str, archive: IndexedArchive, pinned: bool
    ) -> EntryView:
        """The view of archive whose entries start at inode base."""
        found = self._views.get(base)
        if found is None:
            counts = array("I", bytes(4 * len(archive.entries)))
            found = self._views[base] = EntryView(base, naan, key, archive, pinned, counts)
        return found

    def find(self, ino: int) -> Node | None:
        """The live node of ino, if any (made now for an entry readdir handed out)."""
        return self._nodes.get(ino) or self._from_view(ino)

    def get(self, ino: int) -> Node:
        """The node of a live inode; ENOENT (stale) otherwise."""
        node = self.find(ino)
        if node is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return node

    def _counted_at(self, ino: int) -> tuple[EntryView, int] | None:
        """The view and position of ino when it is held there as a count, else None."""
        base = ino >> SLOT_SHIFT << SLOT_SHIFT
        view, index = self._views.get(base), ino - base - 1
        if view is None or not 0 <= index < len(view.counts) or not view.counts[index]:
            return None
        return view, index

    def _from_view(self, ino: int) -> Node | None:
        """The Node of an entry held as a count, entered with that count; else None."""
        at = self._counted_at(ino)
        if at is None:
            return None
        view, index = at
        node = Node(ino, NodeKind.ENTRY, view.naan, view.key, index, view.archive, view.pinned)
        return self._live(node)

    def _take(self, ino: int, count: int | None = None) -> int:
        """Drop count (None: all) of the lookups of ino held as a count in its view; how
        many were held."""
        at = self._counted_at(ino)
        if at is None:
            return 0
        view, index = at
        held = view.counts[index]
        view.counts[index] = 0 if count is None else max(held - count, 0)
        if not view.counts[index]:
            self._counted -= 1
            self.entries -= 1
        return held

    def _live(self, node: Node) -> Node:
        """The table's node for node.ino, entering node if there is none. (Two concurrent
        lookups can each make a node for one inode: the first one entered is the one.)"""
        live = self._nodes.get(node.ino)
        if live is None:
            live = self._nodes[node.ino] = node
            if node.kind is NodeKind.ENTRY:
                node.lookups += self._take(node.ino)
                self.entries += 1
        live.archive = live.archive or node.archive
        return live

    def remember(self, node: Node) -> None:
        """The kernel got node (lookup or readdirplus): count it."""
        self._live(node).lookups += 1

    def remember_entry(self, view: EntryView, index: int) -> None:
        """The kernel got entry index of view (readdirplus): count it, without a Node."""
        self.remember_entries(view, (index,))

    def remember_entries(self, view: EntryView, indexes: Iterable[int]) -> None:
        """The kernel got these entries of view (one readdirplus reply): count each, without
        a Node (a Node made since counts on itself)."""
        nodes, base, counts, new = self._nodes, view.base + 1, view.counts, 0
        for index in indexes:
            node = nodes.get(base + index)
            if node is not None:
                node.lookups += 1
                continue
            if not counts[index]:
                new += 1
            counts[index] += 1
        self._counted += new
        self.entries += new

    def forget(self, ino: int, count: int) -> None:
        """The kernel dropped count lookups of ino; drop the node at zero unless open."""
        node = self._nodes.get(ino)
        if node is None:
            self._take(ino, count)
            return
        if node.kind in (NodeKind.ROOT, NodeKind.LABEL):
            return
        node.lookups = max(node.lookups - count, 0)
        self._drop_if_unused(node)

    def opened(self, node: Node) -> Node:
        """A handle was opened on node; the live node it holds."""
        live = self._live(node)
        live.opens += 1
        return live

    def released(self, node: Node) -> None:
        node.opens -= 1
        self._drop_if_unused(node)

    def _drop_if_unused(self, node: Node) -> None:
        if node.lookups == 0 and node.opens == 0 and self._nodes.get(node.ino) is node:
            del self._nodes[node.ino]
            self.entries -= node.kind is NodeKind.ENTRY


def forget_in_kernel(root: int, names: Collection[tuple[int, str]]) -> None:
    """Make the kernel forget root's attributes and each (directory inode, name) it may
    have cached; safe inside a handler (pyfuse3 notes: never invalidate_entry there)."""
    with contextlib.suppress(OSError):  # ENOENT: the kernel holds no such inode
        pyfuse3.invalidate_inode(pyfuse3.InodeT(root), attr_only=True)
    for parent, name in names:
        pyfuse3.invalidate_entry_async(
            pyfuse3.InodeT(parent), pyfuse3.FileNameT(os.fsencode(name)), ignore_enoent=True
        )


class Namespace:
    """Names to nodes over a catalog: lookups, listings, and the inode numbers they derive.

    metadata_ttl is how long the latest version of an archive is taken as known; forget
    is how the kernel is told to drop what it cached of an old one (forget_in_kernel).
    """

    def __init__(
        self,
        catalog: Catalog,
        metadata_ttl: float,
        forget: Callable[[int, Collection[tuple[int, str]]], None] = forget_in_kernel,
    ) -> None:
        self.catalog = catalog
        self.latest = LatestVersions(catalog, metadata_ttl, self._moved_on)
        self.inodes = InodeTable()
        self._slots: dict[str, int] = {}  # 'naan:12345', an archive ARK, a view -> slot
        # Per archive: (directory inode, name) handed to the kernel that show its latest.
        self._handed: dict[str, set[tuple[int, str]]] = {}
        self._forget = forget

    def _base(self, slot_key: str) -> int:
        slot = self._slots.setdefault(slot_key, len(self._slots) + 1)
        return slot << SLOT_SHIFT

    def _view(self, key: str, version: int, pinned: bool) -> int:
        """The slot base of one version, as the latest shows it or as `@vN` does."""
        named = f"{key}/{version_name(version)}"
        return self._base(named if pinned else f"{named} latest")

    def _node(self, ino: int, make: Callable[[int], Node]) -> Node:
        """The live node of ino, or a new uncounted one."""
        return self.inodes.find(ino) or make(ino)

    def naan_node(self, naan: str) -> Node:
        return self._node(self._base(f"naan:{naan}"), lambda i: Node(i, NodeKind.NAAN, naan))

    def archive_node(self, key: str, archive: IndexedArchive | None) -> Node:
        naan = key[len("ark:") :].split("/", 1)[0]
        node = self._node(
            self._base(key), lambda i: Node(i, NodeKind.ARCHIVE, naan, key, archive=archive)
        )
        node.archive = archive or node.archive
        return node

    async def version_node(self, key: str, version: int) -> Node:
        """`ARCHIVE/@vN`: the root of version N (asked of the catalog unless it is live)."""
        live = self.inodes.find(self._view(key, version, True))
        if live is not None:
            return live
        archive = await self.catalog.archive(key, version)
        return self._node(
            self._view(key, version, True),
            lambda i: Node(i, NodeKind.VERSION, archive.ark.naan, key, -1, archive, True),
        )

    def entry_node(self, parent: Node, archive: IndexedArchive, index: int) -> Node:
        """Entry index of archive, the version parent (a directory of it) shows."""
        base = self._view(parent.key, archive.version, parent.pinned)
        return self._entry_at(base, parent, archive, index)

    def _entry_at(self, base: int, parent: Node, archive: IndexedArchive, index: int) -> Node:
        """Entry index under parent, whose version view starts at inode base (the per-entry
        path of readdir: no ARK is spelled out). Hard links are one inode, their group's
        first entry's."""
        if archive.entries.has_links:
            index = archive.entries.inode_position(index)
        node = self.inodes.find(base + 1 + index)
        if node is None:
            node = Node(
                base + 1 + index,
                NodeKind.ENTRY,
                parent.naan,
                parent.key,
                index,
                archive,
                parent.pinned,
            )
        return node

    def info_node(self, subject: Node) -> Node:
        """The `?info` file of an archive, version or entry node (its archive loaded)."""
        archive = subject.archive
        assert archive is not None
        view = self._view(archive.key, archive.version, subject.pinned)
        ino = (view + 1 + subject.index) | INFO_BIT
        return self._node(
            ino,
            lambda i: Node(
                i, NodeKind.INFO, subject.naan, subject.key, subject.index, archive, subject.pinned
            ),
        )

    async def loaded(self, node: Node) -> IndexedArchive:
        """The archive version a node shows: for an archive root the latest (re-checked
        when due), for any other node the version it was made in."""
        if node.kind is NodeKind.ARCHIVE:
            node.archive = await self.latest.get(node.key)
        assert node.archive is not None, node
        return node.archive

    def _hand(self, key: str, parent: int, names: Collection[str]) -> None:
        """The kernel gets names in directory parent that show key's latest version."""
        self._handed.setdefault(key, set()).update((parent, n) for n in names)

    def _moved_on(self, key: str) -> None:
        """A new latest version of key: the kernel forgets what showed the old one."""
        handed = self._handed.pop(key, set())
        log.info("%s has a new latest version: forgetting %d cached names", key, len(handed))
        self._forget(self._base(key), handed)

    async def object_changed(self, node: Node) -> None:
        """A read found node's object changed: its record is asked again now, and the
        kernel forgets its names and size, so the next stat and open find the new one."""
        try:
            found = await self.catalog.remote_object(node.key)
        except BackendError as exc:
            log.error("cannot look up %s again: %s", node.key, exc)
        else:
            node.obj = found or node.obj
        self._forget(node.ino, self._handed.pop(f"{node.key} object", set()))

    # --- lookup ----------------------------------------------------------------------------

    async def lookup(self, parent: Node, name: str) -> Node:
        """The child called name: any equivalent spelling at the NAAN and Name levels,
        exactly name below an archive's root; FUSEError(ENOENT) if none."""
        _check_length(name)
        if parent.kind is NodeKind.ROOT:
            if name.lower() == LABEL:
                return self.inodes.get(LABEL_INODE)
            if name[: len(LABEL)].lower() == LABEL:
                return self.naan_node(_naan(name[len(LABEL) :]))
        elif parent.kind is NodeKind.LABEL:
            return self.naan_node(_naan(name))
        elif parent.kind is NodeKind.NAAN:
            return await self._lookup_archive(parent, name)
        elif parent.kind is NodeKind.ARCHIVE:
            return await self._lookup_in_latest(parent, name)
        elif parent.is_dir:
            return self._lookup_entry(parent, await self.loaded(parent), name)
        raise pyfuse3.FUSEError(errno.ENOENT)

    async def _lookup_archive(self, naan: Node, name: str) -> Node:
        base, inflection = _split_inflection(name)
        try:
            ark = parse(f"ark:{naan.naan}/{base}")
        except ArkError:
            raise pyfuse3.FUSEError(errno.ENOENT) from None
        if ark.components or ark.variants:
            raise pyfuse3.FUSEError(errno.ENOENT)
        key = str(ark)
        try:
            node = self.archive_node(key, await self.latest.get(key))
        except NotBound:
            obj = None if inflection else await self.catalog.remote_object(key)
            if obj is None:
                raise
        except Unreachable:
            obj = None if inflection else await self.catalog.cached_object(key)
            if obj is None:
                raise
        else:
            if not inflection:
                return node
            self._hand(key, naan.ino, [name])  # the root's ?info is the latest's
            return self.info_node(node)
        node = self._node(
            self._base(f"{key} object"),
            lambda i: Node(i, NodeKind.OBJECT, naan.naan, key, obj=obj),
        )
        node.obj = obj  # a live node shows what its responder answers now (open files keep theirs)
        self._hand(f"{key} object", naan.ino, [name])
        return node

    async def _lookup_in_latest(self, root: Node, name: str) -> Node:
        """A name in an archive root: `@vN` (and its `?info`) is version N, whatever the
        latest holds; any other name is looked up in the latest version."""
        archive = await self.loaded(root)
        base, inflection = _split_inflection(name)
        version = version_of_name(base)
        if version is not None:
            node = await self.version_node(root.key, version)
            return self.info_node(node) if inflection else node
        self._hand(root.key, root.ino, [name])
        return self._lookup_entry(root, archive, name)

    def _lookup_entry(self, parent: Node, archive: IndexedArchive, name: str) -> Node:
        found = self._child_index(parent, archive, name)
        if found is not None:
            return self.entry_node(parent, archive, found)
        base, inflection = _split_inflection(name)
        if inflection:
            found = self._child_index(parent, archive, base)
            if found is not None:
                return self.info_node(self.entry_node(parent, archive, found))
        raise pyfuse3.FUSEError(errno.ENOENT)

    def _child_index(self, parent: Node, archive: IndexedArchive, name: str) -> int | None:
        """The manifest position of parent's child called exactly name, byte for byte.

        No ARK spelling of it (`s5%2Ev7%2Exsl`, hyphens dropped) is taken: below an
        archive's root names are POSIX names, and a name that was never published must
        answer ENOENT (a git ref `ma-in` is not `main`, a command `r-un.sh` not `run.sh`).
        """
        prefix = f"{parent.path}/" if parent.path else ""
        return archive.index.get(prefix + name)

    # --- readdir ---------------------------------------------------------------------------

    def parent_ino(self, node: Node) -> int:
        """The inode of node's parent directory, for readdir's `..` (the root's own; a
        NAAN's is the root, which lists it)."""
        if node.kind in (NodeKind.ROOT, NodeKind.LABEL, NodeKind.NAAN):
            return ROOT_INODE
        if node.kind in (NodeKind.ARCHIVE, NodeKind.OBJECT):
            return self.naan_node(node.naan).ino
        if node.kind is NodeKind.VERSION:
            return self._base(node.key)
        archive = node.archive
        assert archive is not None, node
        parent = archive.entries.parent(node.index)
        if parent >= 0:
            return self._view(node.key, archive.version, node.pinned) + 1 + parent
        if node.pinned:
            return self._view(node.key, archive.version, True)
        return self._base(node.key)

    async def listing(self, node: Node) -> Listing:
        """The children of a directory node, in a stable order; an archive root lists its
        latest version's, without `@vN` names (versions are reached by name only)."""
        if node.kind in (NodeKind.ROOT, NodeKind.LABEL):
            naans = await self.catalog.naans()
            prefix = LABEL if node.kind is NodeKind.ROOT else ""
            return Listing(
                [os.fsencode(prefix + n) for n in naans], lambda i: self.naan_node(naans[i])
            )
        if node.kind is NodeKind.NAAN:
            arks = await self.catalog.names(node.naan)
            return Listing(
                list(map(os.fsencode, arks)),
                lambda i: self.archive_node(f"ark:{node.naan}/{arks[i]}", None),
            )
        if not node.is_dir:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        archive = await self.loaded(node)
        positions = archive.children.get(node.path, [])
        if node.kind is NodeKind.ARCHIVE:
            name = archive.entries.name
            positions = [i for i in positions if version_of_name(name(i)) is None]
            self._hand(node.key, node.ino, list(map(name, positions)))
        base = self._view(node.key, archive.version, node.pinned)
        names = archive.entries.child_names(node.path, positions)
        view = self.inodes.view(base, node.naan, node.key, archive, node.pinned)
        if archive.entries.has_links:  # hard links are one inode, their group's first entry's
            positions = list(map(archive.entries.inode_position, positions))
        return Listing(
            names, lambda i: self._entry_at(base, node, archive, positions[i]), view, positions
        )


def _naan(text: str) -> str:
    """The normalized NAAN a directory name spells (case and hyphens folded); ENOENT if none."""
    try:
        ark = parse(f"{LABEL}{text}/x")
    except ArkError:
        raise pyfuse3.FUSEError(errno.ENOENT) from None
    if ark.query or ark.components or ark.variants:
        raise pyfuse3.FUSEError(errno.ENOENT)
    return ark.naan


def _check_length(name: str) -> None:
    """ENAMETOOLONG for a name over NAME_MAX bytes; a NAME_MAX name's `?info` (and `??`)
    is reachable all the same."""
    size = len(os.fsencode(_split_inflection(name)[0]))
    if size > NAME_MAX:
        raise pyfuse3.FUSEError(errno.ENAMETOOLONG)


def _split_inflection(name: str) -> tuple[str, bool]:
    """(name without a trailing `?info` or `??`, whether it had one)."""
    for inflection in INFLECTIONS:
        if name.endswith(inflection) and len(name) > len(inflection):
            return name[: -len(inflection)], True
    return name, False
