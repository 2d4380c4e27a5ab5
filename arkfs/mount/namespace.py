"""The mount's inodes: the tree of NAANs, archives and manifest entries, and lookup counts.

    /                          root: one `ark:NAAN` directory per known NAAN
    /ark:/                     hidden: its children are NAANs, for the old `ark:/NAAN/Name`
    /ark:12345/                the Names bound under the NAAN
    /ark:12345/x6np1wh8k/      an archive root, then its manifest tree
    .../NAME?info, NAME??      unlisted files holding NAME's ERC record

Inode numbers are derived, not allocated: each NAAN and archive gets a slot when first seen
(slot << 32), an archive's root is its slot's base, entry i of its manifest is base + 1 + i,
and the `?info` file of either sets bit 31. So equivalent spellings (hyphens, NAAN case,
`ark:/`, escaped file names) reach one inode, and an inode the kernel forgot comes back
with the same number. The table holds a Node only while the kernel counts lookups of it or
a handle is open on it, so memory follows the kernel's cache, not the tree's size.
"""

import enum
import errno
from collections.abc import Callable
from dataclasses import dataclass

import pyfuse3

from arkfs.archive.manifest import Kind, entry_ark, entry_path
from arkfs.ark.errors import ArkError
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.mount.catalog import Catalog
from arkfs.mount.indexed import IndexedArchive

ROOT_INODE = int(pyfuse3.ROOT_INODE)
LABEL_INODE = ROOT_INODE + 1
LABEL = "ark:"
SLOT_SHIFT = 32
INFO_BIT = 1 << 31
INFLECTIONS = ("?info", "??")  # THUMP: `??` is the older spelling of `?info`


class NodeKind(enum.Enum):
    """What an inode stands for."""

    ROOT = "root"
    LABEL = "label"  # the hidden `ark:` directory
    NAAN = "naan"
    ARCHIVE = "archive"  # an archive's root directory
    ENTRY = "entry"  # a manifest entry
    INFO = "info"  # the `?info` file of an archive or entry


@dataclass(eq=False, slots=True)
class Node:
    """One inode. index is the manifest position of an entry, -1 for an archive's root."""

    ino: int
    kind: NodeKind
    naan: str = ""
    key: str = ""  # the archive's normalized ARK
    index: int = -1
    archive: IndexedArchive | None = None  # None until an unfetched archive root is used
    lookups: int = 0
    opens: int = 0

    @property
    def is_dir(self) -> bool:
        if self.kind in (NodeKind.ROOT, NodeKind.LABEL, NodeKind.NAAN, NodeKind.ARCHIVE):
            return True
        return self.kind is NodeKind.ENTRY and self.entry_kind is Kind.DIR

    @property
    def entry_kind(self) -> Kind | None:
        """The manifest kind of an entry node, else None."""
        if self.kind is not NodeKind.ENTRY or self.archive is None:
            return None
        return self.archive.entry(self.index).kind

    @property
    def path(self) -> str:
        """The manifest path of an archive or entry node ('' for the archive root)."""
        if self.index < 0 or self.archive is None:
            return ""
        return self.archive.entry(self.index).path

    @property
    def ark(self) -> Ark | None:
        """The ARK this node (or, for an INFO node, its subject) stands for."""
        if self.archive is None:
            return None
        return entry_ark(self.archive.ark, self.path)


@dataclass(frozen=True)
class Listing:
    """A directory's children as readdir sees them: names, and a maker of each child."""

    names: list[str]
    make: Callable[[int], Node]


class InodeTable:
    """The live inodes: a Node is held while the kernel counts lookups of it or a handle
    is open on it."""

    def __init__(self) -> None:
        self._nodes: dict[int, Node] = {
            ROOT_INODE: Node(ROOT_INODE, NodeKind.ROOT, lookups=1),
            LABEL_INODE: Node(LABEL_INODE, NodeKind.LABEL, lookups=1),
        }

    def __len__(self) -> int:
        return len(self._nodes)

    def get(self, ino: int) -> Node:
        """The node of a live inode; ENOENT (stale) otherwise."""
        node = self._nodes.get(ino)
        if node is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return node

    def find(self, ino: int) -> Node | None:
        """The live node of ino, if any."""
        return self._nodes.get(ino)

    def _live(self, node: Node) -> Node:
        """The table's node for node.ino, entering node if there is none. (Two concurrent
        lookups can each make a node for one inode: the first one entered is the one.)"""
        live = self._nodes.setdefault(node.ino, node)
        live.archive = live.archive or node.archive
        return live

    def remember(self, node: Node) -> None:
        """The kernel got node (lookup or readdirplus): count it."""
        self._live(node).lookups += 1

    def forget(self, ino: int, count: int) -> None:
        """The kernel dropped count lookups of ino; drop the node at zero unless open."""
        node = self._nodes.get(ino)
        if node is None or node.kind in (NodeKind.ROOT, NodeKind.LABEL):
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


class Namespace:
    """Names to nodes over a catalog: lookups, listings, and the inode numbers they derive."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.inodes = InodeTable()
        self._slots: dict[str, int] = {}  # 'naan:12345' or an archive ARK -> slot

    def _base(self, slot_key: str) -> int:
        slot = self._slots.setdefault(slot_key, len(self._slots) + 1)
        return slot << SLOT_SHIFT

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
        node.archive = node.archive or archive
        return node

    def entry_node(self, archive: IndexedArchive, index: int) -> Node:
        ino = self._base(archive.key) + 1 + index
        return self._node(
            ino, lambda i: Node(i, NodeKind.ENTRY, archive.ark.naan, archive.key, index, archive)
        )

    def info_node(self, subject: Node) -> Node:
        """The `?info` file of an archive or entry node (its archive loaded)."""
        assert subject.archive is not None
        ino = subject.ino | INFO_BIT
        return self._node(
            ino,
            lambda i: Node(
                i, NodeKind.INFO, subject.naan, subject.key, subject.index, subject.archive
            ),
        )

    async def loaded(self, node: Node) -> IndexedArchive:
        """The archive of an archive, entry or info node; fetched on first use."""
        if node.archive is None:
            node.archive = await self.catalog.archive(node.key)
        return node.archive

    # --- lookup ----------------------------------------------------------------------------

    async def lookup(self, parent: Node, name: str) -> Node:
        """The child called name (any equivalent spelling); FUSEError(ENOENT) if none."""
        if parent.kind is NodeKind.ROOT:
            if name.lower() == LABEL:
                return self.inodes.get(LABEL_INODE)
            if name[: len(LABEL)].lower() == LABEL:
                return self.naan_node(_naan(name[len(LABEL) :]))
        elif parent.kind is NodeKind.LABEL:
            return self.naan_node(_naan(name))
        elif parent.kind is NodeKind.NAAN:
            return await self._lookup_archive(parent.naan, name)
        elif parent.is_dir:
            return self._lookup_entry(parent, await self.loaded(parent), name)
        raise pyfuse3.FUSEError(errno.ENOENT)

    async def _lookup_archive(self, naan: str, name: str) -> Node:
        base, inflection = _split_inflection(name)
        try:
            ark = parse(f"ark:{naan}/{base}")
        except ArkError:
            raise pyfuse3.FUSEError(errno.ENOENT) from None
        if ark.components or ark.variants:
            raise pyfuse3.FUSEError(errno.ENOENT)
        key = str(ark)
        node = self.archive_node(key, await self.catalog.archive(key))
        return self.info_node(node) if inflection else node

    def _lookup_entry(self, parent: Node, archive: IndexedArchive, name: str) -> Node:
        found = self._child_index(parent, archive, name)
        if found is not None:
            return self.entry_node(archive, found)
        base, inflection = _split_inflection(name)
        if inflection:
            found = self._child_index(parent, archive, base)
            if found is not None:
                return self.info_node(self.entry_node(archive, found))
        raise pyfuse3.FUSEError(errno.ENOENT)

    def _child_index(self, parent: Node, archive: IndexedArchive, name: str) -> int | None:
        """The manifest position of parent's child called name, literally or as an ARK
        spelling of it (`s5%2Ev7%2Exsl`, hyphens dropped, `.v7` variants folded back)."""
        prefix = f"{parent.path}/" if parent.path else ""
        found = archive.index.get(prefix + name)
        if found is not None or not name or name.startswith(".") or "?" in name:
            # A leading '.' is structural in an ARK and would be dropped, making `.x` a
            # spelling of `x`: hidden files must not alias visible ones. A '?' starts a
            # query, which parsing would drop: `x?info` is x's record, not x.
            return found
        parent_ark = parent.ark
        assert parent_ark is not None
        try:
            path = entry_path(archive.ark, parse(f"{parent_ark}/{name}"))
        except ArkError:
            return None
        if path is None or path.rpartition("/")[0] != parent.path:
            return None
        return archive.index.get(path)

    # --- readdir ---------------------------------------------------------------------------

    async def listing(self, node: Node) -> Listing:
        """The children of a directory node, in a stable order."""
        if node.kind in (NodeKind.ROOT, NodeKind.LABEL):
            naans = await self.catalog.naans()
            prefix = LABEL if node.kind is NodeKind.ROOT else ""
            return Listing([prefix + n for n in naans], lambda i: self.naan_node(naans[i]))
        if node.kind is NodeKind.NAAN:
            names = await self.catalog.names(node.naan)
            return Listing(names, lambda i: self.archive_node(f"ark:{node.naan}/{names[i]}", None))
        if not node.is_dir:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        archive = await self.loaded(node)
        positions = archive.children.get(node.path, [])
        return Listing(
            [archive.entry(i).name for i in positions],
            lambda i: self.entry_node(archive, positions[i]),
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


def _split_inflection(name: str) -> tuple[str, bool]:
    """(name without a trailing `?info` or `??`, whether it had one)."""
    for inflection in INFLECTIONS:
        if name.endswith(inflection) and len(name) > len(inflection):
            return name[: -len(inflection)], True
    return name, False
