"""Archive manifests: what an ARK-named archive holds, versioned, in msgpack or JSON.

An archive is a directory tree bound to one ARK (`ark:NAAN/Name`). Its manifest lists every
entry below the root (directories, files, symlinks) with size, mode and mtime; a file also
carries its XET file hash and SHA-256, so the bytes can be fetched from any XET CAS and
verified end to end. `cas_url` and `token_url` say where the CAS is and where to get CAS
tokens (`{accessToken, exp, casUrl}`); None means the CAS next to the resolver.

Each entry is an ARK too: its path's file names become qualifier components
(`filename_to_qualifier`), so `c3/s5.v7.xsl` under `ark:12345/x6np1wh8k` is
`ark:12345/x6np1wh8k/c3/s5%2Ev7%2Exsl`. `entry_path` also accepts the unescaped spelling
`.../c3/s5.v7.xsl`, whose '.v7.xsl' parses as variants, since people will type it.
Version N of an archive is `ark:12345/x6np1wh8k/@vN` (arkfs.ark.version_qualifier): entry_ark and
entry_path take the archive's ARK with that qualifier, and name entries under it.

The msgpack form is a map with a `format` tag and a `version`. Version 2 holds the
entries in columns, one binary blob per field (Entries), so a manifest of 1,000,000 files
parses into about 110 MB without a Python object per entry; version 1 (one array per
entry, in the order of ENTRY_FIELDS) is still read. A reader refuses a newer version with
a message that says to upgrade.

What POSIX archivers keep beyond that is stored sparsely, only for the entries that have
it, so an archive without it costs nothing (and a manifest written before these existed
reads as one without them): `links`, the hard-link groups (positions of files that are one
inode in the source); `xattrs`, the source's `user.*` extended attributes by position; and
`root`, the mode, mtime and attributes of the archive's root directory. mtimes are signed
nanoseconds since 1970 (before it, negative), as stat gives them.

This module imports arkfs.xet.hashing for the hash-string form of XET hashes in JSON; both
are pure format layers.
"""

import operator
import stat
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any, NamedTuple, TypeVar, overload

import msgpack

from arkfs.archive import _tree
from arkfs.ark.erc import Erc
from arkfs.ark.errors import ArkError, ManifestError, VersionError
from arkfs.ark.filenames import filename_text, filename_to_qualifier, qualifier_to_filename
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.ark.version_qualifier import split_version
from arkfs.util.msgpack_file import FileSlice, bin_header, read_map
from arkfs.xet.errors import HashStringError
from arkfs.xet.hashing import hash_to_string, string_to_hash

FORMAT = "arkfs-manifest"
VERSION = 2  # 1: one array per entry; 2: one column per field (Entries)
ENTRY_FIELDS = ("path", "kind", "size", "mode", "mtime_ns", "xet_hash", "sha256", "target")
MAX_MANIFEST_SIZE = 256 * 1024 * 1024
ENTRY_CACHE = 4096  # entries kept made, per manifest
_T = TypeVar("_T")
_FAULTS = {  # what _tree.parents finds wrong with an entry
    _tree.FAULT_ENDS: "its path's end does not cut 'paths'",
    _tree.FAULT_ORDER: "entries must be sorted by path, without repeats",
    _tree.FAULT_NAME: "not a relative path of file names",
    _tree.FAULT_PARENT: "its parent directory is not listed",
}
UNLIKE_BLOCK = 1024  # entries whose columns files_unlike compares at once
# The extended-attribute namespaces arkfs serves itself; a source attribute may not be in one.
OWN_XATTRS = ("user.ark.", "user.xet.", "user.arkfs.")
Xattrs = tuple[tuple[str, bytes], ...]  # (name, value) pairs, sorted by name
Hashes = dict[str, tuple[bytes, bytes | None]]  # path -> XET hash and SHA-256 of a file


class Kind(StrEnum):
    """What an entry is."""

    DIR = "dir"
    FILE = "file"
    SYMLINK = "symlink"


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry below the archive root; path is '/'-separated file names."""

    path: str
    kind: Kind
    size: int
    mode: int  # permission bits only (0o7777)
    mtime_ns: int
    xet_hash: bytes | None = None  # files only
    sha256: bytes | None = None  # files only
    target: str | None = None  # symlinks only
    link: str | None = None  # a hard-linked file: the first path of its group, in path order
    xattrs: Xattrs = ()  # the source's user.* extended attributes

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def parent(self) -> str:
        """The parent's path; '' for the archive root."""
        return self.path.rpartition("/")[0]

    def to_json(self) -> dict[str, Any]:
        """The entry as JSON: hashes as hash strings (XET) and hex (SHA-256), no nulls."""
        item: dict[str, Any] = {f: getattr(self, f) for f in ENTRY_FIELDS[:5]}
        if self.xet_hash is not None:
            item["xet_hash"] = hash_to_string(self.xet_hash)
        if self.sha256 is not None:
            item["sha256"] = self.sha256.hex()
        if self.target is not None:
            item["target"] = self.target
        if self.link is not None:
            item["link"] = self.link
        if self.xattrs:
            item["xattrs"] = {name: value.hex() for name, value in self.xattrs}
        return item

    @property
    def st_mode(self) -> int:
        """mode with the file type bits, as stat() gives it."""
        return _TYPE_BITS[_KINDS.index(self.kind)] | self.mode


class Entries(Sequence[Entry]):
    """A manifest's entries in columns, one per field, sorted by path; an Entry is made only
    when one is asked for, so a 1,000,000-entry manifest costs about 110 bytes per entry
    instead of a Python object per field.

    Paths are UTF-8 (surrogate escapes kept as the bytes they stand for) and sorted as
    bytes, which is code point order for every name that is text. Each entry has a
    32-byte slot in the XET and SHA-256 columns, filled for files only (a file's SHA-256
    only when its flag says it has one). Construction checks that the entries form one
    tree.
    """

    def __init__(
        self,
        columns: dict[str, Any],
        targets: dict[int, str],
        links: Sequence[Sequence[int]] = (),
        xattrs: dict[int, Xattrs] | None = None,
    ) -> None:
        self._paths: bytes = columns["paths"]
        self._ends: array[int] = columns["path_ends"]
        self._kinds: bytes = columns["kinds"]
        self._sizes: array[int] = columns["sizes"]
        self._modes: array[int] = columns["modes"]
        self._mtimes: array[int] = columns["mtimes"]
        self._xet: bytes = columns["xet_hashes"]
        self._sha: bytes = columns["sha256s"]
        self._has_sha: bytes = columns["sha256_flags"]
        self._targets = targets
        self._xattrs = xattrs or {}
        if any(len(group) < 2 for group in links):
            raise ManifestError("manifest 'links' holds a group that is not 2+ positions")
        # Hard links, sparse: a linked file's position -> its group's first, and that
        # first -> the group's size (the link count).
        self._leaders = {i: group[0] for group in links for i in group}
        self._link_counts = {group[0]: len(group) for group in links}
        self.has_links = bool(links)  # the hot paths (readdir, lookup) ask this first
        self._parents, self._dirs = self._check()
        self._check_extras(links)
        self._by_parent: array[int] | None = None  # positions ordered by parent, then path
        # A lookup, readdir and getattr of one entry come close together: the last few
        # thousand entries made are kept, so each is made once (lru_cache is C code).
        self._made = lru_cache(maxsize=ENTRY_CACHE)(self._make)

    @classmethod
    def of(cls, entries: Iterable[Entry], hashes: Hashes | None = None) -> "Entries":
        """The columns of entries, in their order (which must be sorted by path); a file
        entry without an XET hash takes its XET hash and SHA-256 from hashes, by path, if
        given (a republish keeps the scan's entry of a file it did not read: one Entry
        made per file, not two)."""
        return cls(*_columns_of(entries, hashes))

    def merged(
        self, drop: Iterable[int], entries: Sequence[Entry], hashes: Hashes | None = None
    ) -> "Entries":
        """These entries but those at positions drop, with entries (sorted by path, none at
        a path kept; hashes as of takes them) in their places: a republish's manifest made
        from its previous version's columns, an Entry made only for what changed. The
        result is checked as any construction is. Hard links are not merged
        (ManifestError): publish them whole."""
        columns, targets, groups, xattrs = _columns_of(entries, hashes)
        if self.has_links or groups:
            raise ManifestError("hard-linked entries are not merged")
        old = _Piece(
            {name: getattr(self, attr) for name, attr in _ATTRS.items()},
            self._targets,
            self._xattrs,
        )
        new = _Piece(columns, targets, xattrs)
        cuts = [bisect_left(range(len(self)), path_order(e), key=self._path_bytes) for e in entries]
        dropped, at = sorted(set(drop)), 0
        pieces: list[tuple[_Piece, int, int]] = []
        for j, cut in enumerate([*cuts, len(self)]):
            pieces += [(old, lo, hi) for lo, hi in _runs(at, cut, dropped)]
            if j < len(entries):
                pieces.append((new, j, j + 1))
            at = cut
        return Entries(*_joined(pieces))

    @classmethod
    def from_packed(cls, obj: dict[str, Any]) -> "Entries":
        """The entries of a version 2 document's columns (as to_packed writes them)."""
        count = obj.get("count")
        if not isinstance(count, int) or count < 0:
            raise ManifestError("manifest 'count' must be a non-negative integer")
        columns: dict[str, Any] = {}
        for name, code in _COLUMNS.items():
            data = obj.get(name)
            if not isinstance(data, bytes | FileSlice):
                raise ManifestError(f"manifest column {name!r} must be binary")
            width = 32 if code == "32" else (1 if code == "B" else array(code).itemsize)
            if name != "paths" and len(data) != count * width:
                raise ManifestError(
                    f"manifest column {name!r} holds {len(data)} bytes, not {count * width}"
                )
            if isinstance(data, FileSlice):  # read here, one column's bytes at a time
                data = _read(data)
            columns[name] = data if code in ("B", "32") else _array(code, data)
        pairs = obj.get("targets")
        if not isinstance(pairs, list) or not all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], int) and isinstance(p[1], str)
            for p in pairs
        ):
            raise ManifestError("manifest 'targets' must be a list of [position, target]")
        ends = columns["path_ends"]  # that each follows the one before, the tree check sees
        if count and ends[-1] != len(columns["paths"]):
            raise ManifestError("manifest column 'path_ends' does not cut 'paths'")
        links = obj.get("links", [])  # absent in manifests written before links were kept
        if not isinstance(links, list) or not all(
            isinstance(g, list) and all(type(i) is int for i in g) for g in links
        ):
            raise ManifestError("manifest 'links' must be a list of lists of positions")
        xattrs = obj.get("xattrs", [])
        if not isinstance(xattrs, list) or not all(
            isinstance(p, list) and len(p) == 2 and type(p[0]) is int for p in xattrs
        ):
            raise ManifestError("manifest 'xattrs' must be a list of [position, attributes]")
        return cls(columns, dict(pairs), links, {i: _xattrs(a) for i, a in xattrs})

    def to_packed(self) -> dict[str, Any]:
        """The columns as a version 2 document holds them: little-endian, one blob each."""
        packed: dict[str, Any] = {"count": len(self)}
        for name, code in _COLUMNS.items():
            column = getattr(self, _ATTRS[name])
            packed[name] = column if code in ("B", "32") else _little_endian(column)
        packed["targets"] = sorted([i, t] for i, t in self._targets.items())
        if self._link_counts:
            groups: dict[int, list[int]] = {}
            for i, first in sorted(self._leaders.items()):
                groups.setdefault(first, []).append(i)
            packed["links"] = list(groups.values())
        if self._xattrs:
            packed["xattrs"] = [[i, _packed_xattrs(a)] for i, a in sorted(self._xattrs.items())]
        return packed

    def _check(self) -> tuple["array[int]", dict[bytes, int]]:
        """Each entry's parent position (-1: the root), and the directories by path; raise
        ManifestError unless the entries form one tree of file names under the root."""
        if b"\0" in self._paths:
            raise ManifestError("manifest paths must not contain NUL")
        if (_tree.extremes(self._kinds) or (0, 0))[1] >= len(_KINDS):
            bad = next(i for i, k in enumerate(self._kinds) if k >= len(_KINDS))
            raise ManifestError(f"manifest entry {self.path(bad)!r} has an unknown kind")
        for column, top in ((self._sizes, None), (self._modes, 0o7777)):  # mtimes are signed
            low, high = _tree.extremes(column) or (0, 0)
            if low < 0 or (top is not None and high > top):
                bad = next(i for i, v in enumerate(column) if v < 0 or (top and v > top))
                raise ManifestError(f"{self._where(bad)}: size, mode or mtime out of range")
        # A directory sorts before everything in it (its path is their prefix), so the
        # directories are taken first; then one C pass checks order, names and parents.
        dirs = {self._path_bytes(i): i for i in _positions(self._kinds, _DIR)}
        dirs[b""] = -1
        found, fault, at = _tree.parents(self._paths, self._ends, dirs)
        if fault:
            raise ManifestError(f"{self._where(at)}: {_FAULTS[fault]}")
        parents = array("i")
        parents.frombytes(found)
        self._check_slots()
        del dirs[b""]
        return parents, dirs

    def _check_slots(self) -> None:
        """Raise ManifestError unless only files have an XET hash and a SHA-256 (flagged, else
        zeros) and only symlinks a target: whole columns at a time, then the first entry
        at fault (a per-entry loop was most of the time a mount takes to load a manifest)."""
        kinds, has_sha, count = self._kinds, self._has_sha, len(self._kinds)
        files = kinds.translate(_IS_FILE)
        for i in _positions(files, 0):  # not a file: no XET hash
            if self._xet[32 * i : 32 * i + 32] != _ZERO:
                raise ManifestError(
                    f"{self._where(i)}: a file, and only a file, has a 32-byte XET hash"
                )
        flags = int.from_bytes(has_sha, "little")
        if has_sha.translate(None, b"\x00\x01") or flags & ~int.from_bytes(files, "little"):
            bad = next(i for i in range(count) if has_sha[i] > files[i])
            raise ManifestError(f"{self._where(bad)}: SHA-256 must be 32 bytes, on a file")
        for i in _positions(has_sha, 0):  # no SHA-256: its slot is zeros
            if self._sha[32 * i : 32 * i + 32] != _ZERO:
                raise ManifestError(f"{self._where(i)}: SHA-256 must be 32 bytes, on a file")
        targets = self._targets
        if kinds.count(_SYMLINK) != len(targets) or not all(
            0 <= i < count and kinds[i] == _SYMLINK for i in targets
        ):
            odd = next((i for i in range(count) if (kinds[i] == _SYMLINK) != (i in targets)), None)
            if odd is None:
                raise ManifestError("manifest 'targets' names a position past the entries")
            raise ManifestError(f"{self._where(odd)}: a symlink, and only a symlink, has a target")

    def _check_extras(self, links: Sequence[Sequence[int]]) -> None:
        """Raise ManifestError unless each link group is files in path order with one
        content, mode and mtime (the mount shows them as one inode), and each attribute is
        a source's user.* one at an entry."""
        count = len(self)
        if len(self._leaders) != sum(map(len, links)):
            raise ManifestError("manifest 'links' lists a position twice")
        for group in links:
            if list(group) != sorted(group) or not 0 <= group[0] < count:
                raise ManifestError("manifest 'links' holds a group not of 2+ positions in order")
            if group[-1] >= count or any(self._kinds[i] != _FILE for i in group):
                raise ManifestError(f"{self._where(group[0])}: only files can be hard links")
            first = self._same_inode(group[0])
            for i in group[1:]:
                if self._same_inode(i) != first:
                    raise ManifestError(
                        f"{self._where(i)}: a hard link differs from {self.path(group[0])!r}"
                    )
        for i, pairs in self._xattrs.items():
            if not 0 <= i < count:
                raise ManifestError("manifest 'xattrs' names a position past the entries")
            for name, _ in pairs:
                check_xattr_name(name, self._where(i))

    def _same_inode(self, i: int) -> tuple[bytes, int, int, int]:
        """What entries that are one inode must share: content, size, mode, mtime."""
        return self._xet[32 * i : 32 * i + 32], self._sizes[i], self._modes[i], self._mtimes[i]

    def _where(self, i: int) -> str:
        return f"manifest entry {self.path(i)!r}"

    def __len__(self) -> int:
        return len(self._kinds)

    @overload
    def __getitem__(self, i: int) -> Entry: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Entry]: ...
    def __getitem__(self, i: int | slice) -> Entry | Sequence[Entry]:
        if type(i) is int and 0 <= i < len(self._kinds):  # the common case, first
            return self._made(i)
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(f"entry {i} of {len(self)}")
        return self._made(i + len(self) if i < 0 else i)

    def __iter__(self) -> Iterator[Entry]:
        return map(self._make, range(len(self)))

    def _make(self, i: int) -> Entry:
        kind = _KINDS[self._kinds[i]]
        at = 32 * i
        return Entry(
            self.path(i),
            kind,
            self._sizes[i],
            self._modes[i],
            self._mtimes[i],
            self._xet[at : at + 32] if kind is Kind.FILE else None,
            self._sha[at : at + 32] if self._has_sha[i] else None,
            self._targets.get(i),
            self.path(self._leaders[i]) if i in self._leaders else None,
            self._xattrs.get(i, ()),
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Entries):
            return all(getattr(self, a) == getattr(other, a) for a in _ATTRS.values()) and (
                (self._targets, self._leaders, self._xattrs)
                == (other._targets, other._leaders, other._xattrs)
            )
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def path(self, i: int) -> str:
        """The path of the entry at position i."""
        return self._path_bytes(i).decode("utf-8", "surrogateescape")

    def _path_bytes(self, i: int) -> bytes:
        return self._paths[self._ends[i - 1] if i else 0 : self._ends[i]]

    def name(self, i: int) -> str:
        """The file name of the entry at position i."""
        return self.file_name(i).decode("utf-8", "surrogateescape")

    def file_name(self, i: int) -> bytes:
        """The file name of the entry at position i, as bytes (as the kernel gets it)."""
        path = self._path_bytes(i)
        return path[path.rfind(b"/") + 1 :]

    def is_dir(self, i: int) -> bool:
        return self._kinds[i] == _DIR

    def kind(self, i: int) -> Kind:
        return _KINDS[self._kinds[i]]

    def at_top(self, i: int) -> bool:
        """Whether the entry at position i is directly inside the archive root."""
        return self._parents[i] < 0

    def parent(self, i: int) -> int:
        """The position of the directory holding the entry at position i; -1 the root."""
        return self._parents[i]

    def stat(self, i: int) -> tuple[int, int, int]:
        """(st_mode, st_size, mtime_ns) of the entry at position i as stat() gives them (a
        symlink's size is its target's length), from the columns without making an Entry."""
        code = self._kinds[i]
        size = self._sizes[i]
        if code == _SYMLINK:
            size = len(self._targets[i].encode("utf-8", "surrogateescape"))
        return _TYPE_BITS[code] | self._modes[i], size, self._mtimes[i]

    def stats(self, positions: Sequence[int]) -> tuple[list[int], list[int], list[int], list[int]]:
        """stat() of each of positions, as three columns (st_mode, st_size, mtime_ns), and
        which of them (indexes into positions) are directories: a directory's listing in
        one pass in C, not a call per entry."""
        modes, sizes, mtimes, kinds = _tree.stats(
            self._kinds, self._modes, self._sizes, self._mtimes, _int32(positions), _TYPE_BITS
        )
        for at in _positions(kinds, _SYMLINK):  # a symlink's size is its target's length
            sizes[at] = self.stat(positions[at])[1]
        return modes, sizes, mtimes, list(_positions(kinds, _DIR))

    def child_names(self, path: str, positions: Sequence[int]) -> list[bytes]:
        """The file names (bytes) of positions, all children of directory path ('' the
        root): each path past its parent's, cut without a search per entry."""
        cut = len(path.encode("utf-8", "surrogateescape")) + 1 if path else 0
        return _tree.names(self._paths, self._ends, _int32(positions), cut)

    def inode_position(self, i: int) -> int:
        """The position whose inode entry i shares: its hard-link group's first, else i."""
        return self._leaders.get(i, i)

    def link_count(self, i: int) -> int:
        """st_nlink of the file at position i: the size of its hard-link group, else 1."""
        return self._link_counts.get(self._leaders.get(i, i), 1)

    def xattrs(self, i: int) -> Xattrs:
        """The source's extended attributes of the entry at position i."""
        return self._xattrs.get(i, ())

    def position(self, path: str) -> int | None:
        """The position of the entry at path, or None."""
        try:
            key = path.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return None
        i = bisect_left(range(len(self)), key, key=self._path_bytes)
        return i if i < len(self) and self._path_bytes(i) == key else None

    def under(self, path: str) -> range:
        """Positions of every entry below directory path ('' the root): one run, since
        entries are sorted by path."""
        if not path:
            return range(len(self))
        key = path.encode("utf-8", "surrogateescape") + b"/"
        lo = bisect_left(range(len(self)), key, key=self._path_bytes)
        hi = bisect_left(range(lo, len(self)), key[:-1] + b"0", key=self._path_bytes) + lo
        return range(lo, hi)

    def children(self, path: str) -> Sequence[int]:
        """Positions of the entries directly inside directory path ('' the root), in path
        order (so by name). The index behind it is built at the first call."""
        parent = -1 if not path else self._dirs.get(path.encode("utf-8", "surrogateescape"))
        if parent is None:
            return []
        order, lo, hi = self._listing(parent)
        return order[lo:hi]

    def siblings(self, i: int) -> Sequence[int]:
        """Positions of the entries in the directory of the entry at position i (i among
        them), in path order: children() of its directory, not copied (a view)."""
        order, lo, hi = self._listing(self._parents[i])
        return memoryview(order)[lo:hi]

    def _listing(self, parent: int) -> "tuple[array[int], int, int]":
        """The by-parent index, and where the entries of directory parent (-1 the root) are
        in it."""
        if self._by_parent is None:
            self._by_parent = array("i")
            self._by_parent.frombytes(_tree.by_parent(self._parents))
        order, key = self._by_parent, self._parents.__getitem__
        lo = bisect_left(order, parent, key=key)
        return order, lo, bisect_right(order, parent, lo=lo, key=key)

    def directories(self) -> Iterator[str]:
        """The path of every directory, in path order."""
        for path in self._dirs:
            yield path.decode("utf-8", "surrogateescape")

    def files(self) -> Iterator[int]:
        """Positions of the files, in path order."""
        return _positions(self._kinds, _FILE)

    def hashes(self, i: int) -> tuple[bytes | None, bytes | None]:
        """The XET hash and SHA-256 of the entry at position i (None, None unless a file)."""
        if self._kinds[i] != _FILE:
            return None, None
        at = 32 * i
        return self._xet[at : at + 32], self._sha[at : at + 32] if self._has_sha[i] else None

    def file_hashes(self) -> Iterator[tuple[int, bytes, int, bytes | None]]:
        """(position, XET hash, size, SHA-256 or None) of each file, from the columns
        without making an Entry (a bind checks 1,000,000 of them)."""
        xet, sha, has_sha, sizes = self._xet, self._sha, self._has_sha, self._sizes
        for i in self.files():
            at = 32 * i
            yield i, xet[at : at + 32], sizes[i], sha[at : at + 32] if has_sha[i] else None

    def files_unlike(self, other: "Entries") -> Iterator[tuple[int, bytes, int, bytes | None]]:
        """The file_hashes rows of the files that other does not list at the same path with
        the same XET hash, size and SHA-256: one pass over both, each in path order (no
        Entry made, no set of 1,000,000 rows held). When both list the same paths and kinds
        (a republish that changed files' contents only), their columns are compared
        UNLIKE_BLOCK entries at a time and only the blocks that differ are walked: 100,000
        files took 0.47 s walked one by one."""
        if (
            self._ends == other._ends
            and self._paths == other._paths
            and self._kinds == other._kinds
        ):
            yield from self._files_unlike_aligned(other)
            return
        theirs = other.file_hashes()
        them = next(theirs, None)
        for row in self.file_hashes():
            path = self._path_bytes(row[0])
            while them is not None and other._path_bytes(them[0]) < path:
                them = next(theirs, None)
            if them is None or them[1:] != row[1:] or other._path_bytes(them[0]) != path:
                yield row

    def _files_unlike_aligned(
        self, other: "Entries"
    ) -> Iterator[tuple[int, bytes, int, bytes | None]]:
        """files_unlike of other, which lists the same paths and kinds at the same positions:
        a file differs where its XET hash, size, SHA-256 flag or slot differs (a slot
        without a SHA-256 is zeros in both, _check_slots)."""
        xet, sha, has_sha, sizes = self._xet, self._sha, self._has_sha, self._sizes
        for start in range(0, len(self), UNLIKE_BLOCK):
            end = min(start + UNLIKE_BLOCK, len(self))
            lo, hi = 32 * start, 32 * end
            if (
                xet[lo:hi] == other._xet[lo:hi]
                and sha[lo:hi] == other._sha[lo:hi]
                and has_sha[start:end] == other._has_sha[start:end]
                and sizes[start:end] == other._sizes[start:end]
            ):
                continue
            for i in range(start, end):
                at = 32 * i
                if self._kinds[i] == _FILE and (
                    xet[at : at + 32] != other._xet[at : at + 32]
                    or sizes[i] != other._sizes[i]
                    or has_sha[i] != other._has_sha[i]
                    or sha[at : at + 32] != other._sha[at : at + 32]
                ):
                    yield i, xet[at : at + 32], sizes[i], sha[at : at + 32] if has_sha[i] else None

    def same_files(self, other: "Entries") -> bool:
        """Whether other lists the same files at the same positions: kinds, sizes, XET
        hashes and SHA-256s alike, compared column by column (no Entry is made)."""
        return (
            self._kinds == other._kinds
            and self._sizes == other._sizes
            and self._xet == other._xet
            and self._has_sha == other._has_sha
            and self._sha == other._sha
        )

    @property
    def file_count(self) -> int:
        return self._kinds.count(_FILE_BYTE)

    @property
    def total_size(self) -> int:
        """The files' bytes: every size but the symlinks' (a directory's is 0)."""
        return sum(self._sizes) - sum(
            map(self._sizes.__getitem__, _positions(self._kinds, _SYMLINK))
        )

    def file_hash_set(self) -> set[bytes]:
        """The XET hashes of the files (a set made from the column in one pass)."""
        xet = self._xet
        hashes = {xet[at : at + 32] for at in range(0, len(xet), 32)}
        hashes.discard(_ZERO)  # the empty slots of directories and symlinks
        return hashes


def _columns_of(
    entries: Iterable[Entry], hashes: Hashes | None = None
) -> tuple[dict[str, Any], dict[int, str], list[list[int]], dict[int, Xattrs]]:
    """The columns, symlink targets, hard-link groups and attributes of entries, in their
    order (Entries.of); not checked as a tree."""
    paths, ends = bytearray(), array("I")
    kinds, sizes, modes, mtimes = bytearray(), array("q"), array("H"), array("q")
    xet, sha, has_sha, targets = bytearray(), bytearray(), bytearray(), {}
    groups: dict[str, list[int]] = {}
    xattrs: dict[int, Xattrs] = {}
    for i, e in enumerate(entries):
        where = f"manifest entry {e.path!r}"
        try:
            paths += e.path.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raise ManifestError(f"{where}: not a relative path of file names") from None
        ends.append(len(paths))
        kinds.append(_KINDS.index(e.kind))
        try:
            sizes.append(e.size)
            modes.append(e.mode)
            mtimes.append(e.mtime_ns)
        except OverflowError:
            raise ManifestError(f"{where}: size, mode or mtime out of range") from None
        xet_hash, sha256 = e.xet_hash, e.sha256
        if xet_hash is None and hashes and e.kind is Kind.FILE:
            xet_hash, sha256 = hashes.get(e.path, (None, None))
        if (e.kind is Kind.FILE) != (isinstance(xet_hash, bytes) and len(xet_hash) == 32):
            raise ManifestError(f"{where}: a file, and only a file, has a 32-byte XET hash")
        if sha256 is not None and (e.kind is not Kind.FILE or len(sha256) != 32):
            raise ManifestError(f"{where}: SHA-256 must be 32 bytes, on a file")
        xet += xet_hash or _ZERO
        sha += sha256 or _ZERO
        has_sha.append(sha256 is not None)
        if e.target is not None:
            targets[i] = e.target
        if e.link is not None:
            if e.link != e.path and e.link not in groups:
                raise ManifestError(f"{where}: its link {e.link!r} is not a file before it")
            groups.setdefault(e.link, []).append(i)
        if e.xattrs:
            xattrs[i] = e.xattrs
    columns = dict(paths=bytes(paths), path_ends=ends, kinds=bytes(kinds), sizes=sizes, modes=modes)
    columns |= dict(mtimes=mtimes, xet_hashes=bytes(xet), sha256s=bytes(sha))
    columns["sha256_flags"] = bytes(has_sha)
    return columns, targets, list(groups.values()), xattrs


class _Piece(NamedTuple):
    """Columns to take runs of entries from (Entries.merged)."""

    columns: dict[str, Any]
    targets: dict[int, str]
    xattrs: dict[int, Xattrs]


def _runs(lo: int, hi: int, dropped: Sequence[int]) -> Iterator[tuple[int, int]]:
    """The runs of positions lo to hi - 1 that are not in dropped (sorted)."""
    for i in dropped[bisect_left(dropped, lo) : bisect_left(dropped, hi)]:
        if lo < i:
            yield lo, i
        lo = i + 1
    if lo < hi:
        yield lo, hi


def _joined(
    pieces: Sequence[tuple[_Piece, int, int]],
) -> tuple[dict[str, Any], dict[int, str], list[list[int]], dict[int, Xattrs]]:
    """The columns of runs of entries (piece, first, end) one after another."""
    parts: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
    ends, at, count = array("I"), 0, 0
    targets: dict[int, str] = {}
    xattrs: dict[int, Xattrs] = {}
    for piece, lo, hi in pieces:
        c = piece.columns
        start = c["path_ends"][lo - 1] if lo else 0
        stop = c["path_ends"][hi - 1]
        parts["paths"].append(c["paths"][start:stop])
        ends.extend([end - start + at for end in c["path_ends"][lo:hi]])
        at += stop - start
        for name, code in _COLUMNS.items():
            if name not in ("paths", "path_ends"):
                width = 32 if code == "32" else 1
                parts[name].append(c[name][width * lo : width * hi])
        targets |= {count + i - lo: t for i, t in piece.targets.items() if lo <= i < hi}
        xattrs |= {count + i - lo: a for i, a in piece.xattrs.items() if lo <= i < hi}
        count += hi - lo
    columns: dict[str, Any] = {"paths": b"".join(parts["paths"]), "path_ends": ends}
    for name, code in _COLUMNS.items():
        if name not in columns:
            joined = parts[name]
            columns[name] = (
                b"".join(joined)
                if code in ("B", "32")
                else array(code, b"".join(p.tobytes() for p in joined))
            )
    return columns, targets, [], xattrs


_KINDS = (Kind.DIR, Kind.FILE, Kind.SYMLINK)  # kind codes in the 'kinds' column
_DIR, _FILE, _SYMLINK = range(3)
_TYPE_BITS = (stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK)  # st_mode type bits, by kind code
_FILE_BYTE = bytes([_FILE])
_ZERO = bytes(32)
# Version 2 columns: array type code ('B' raw bytes, '32' 32-byte slots) and attribute.
_COLUMNS = {
    "paths": "B",
    "path_ends": "I",
    "kinds": "B",
    "sizes": "q",
    "modes": "H",
    "mtimes": "q",
    "xet_hashes": "32",
    "sha256s": "32",
    "sha256_flags": "B",
}
_ATTRS = dict(
    zip(
        _COLUMNS,
        ("_paths", "_ends", "_kinds", "_sizes", "_modes", "_mtimes", "_xet", "_sha", "_has_sha"),
        strict=True,
    )
)


_IS_FILE = bytes(int(code == _FILE) for code in range(256))  # kinds.translate: 1 for a file


def _int32(positions: Sequence[int]) -> "array[int]":
    """positions as an int32 array, as _tree takes them (children() gives one already)."""
    if isinstance(positions, array) and positions.typecode == "i":
        return positions
    return array("i", positions)


def _positions(column: bytes, value: int) -> Iterator[int]:
    """Positions of a byte column that hold value, in order."""
    needle, start = bytes([value]), 0
    while (i := column.find(needle, start)) >= 0:
        yield i
        start = i + 1


def _read(data: FileSlice) -> bytes:
    """A column's bytes from the file that holds the manifest."""
    try:
        return data.read()
    except ValueError as exc:
        raise ManifestError(f"manifest is not valid msgpack: {exc}") from None


def _array(code: str, data: bytes) -> "array[int]":
    """A column from its little-endian bytes."""
    column = array(code, data)
    if sys.byteorder == "big":
        column.byteswap()
    return column


def _little_endian(column: "array[int]") -> bytes:
    if sys.byteorder == "big":
        column = array(column.typecode, column)
        column.byteswap()
    return column.tobytes()


def check_xattr_name(name: str, where: str) -> None:
    """Raise ManifestError unless name is a user.* attribute outside arkfs's own namespaces
    (those the mount serves itself, which it would hide)."""
    if not name.isprintable() or not _is_utf8(name):
        raise ManifestError(f"{where}: extended attribute name {name!r} is not UTF-8 text")
    if not name.startswith("user.") or name.startswith(OWN_XATTRS):
        raise ManifestError(
            f"{where}: extended attribute {name!r} is not user.* or is in arkfs's own "
            f"namespaces ({', '.join(n + '*' for n in OWN_XATTRS)})"
        )


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _xattrs(obj: object) -> Xattrs:
    """Attributes from [[name, value], ...] (msgpack) or {name: hex} (JSON), sorted."""
    pairs = list(obj.items()) if isinstance(obj, dict) else obj
    if not isinstance(pairs, list) or not all(
        isinstance(p, list | tuple) and len(p) == 2 and isinstance(p[0], str) for p in pairs
    ):
        raise ManifestError("manifest extended attributes must be name and value pairs")
    try:
        values = [v if isinstance(v, bytes) else bytes.fromhex(v) for _, v in pairs]
    except (TypeError, ValueError):
        raise ManifestError("manifest extended attribute values must be binary or hex") from None
    named = tuple(sorted(zip((p[0] for p in pairs), values, strict=True)))
    if len({name for name, _ in named}) != len(named):
        raise ManifestError("manifest extended attributes name one attribute twice")
    return named


def _packed_xattrs(pairs: Xattrs) -> list[list[Any]]:
    return [[name, value] for name, value in pairs]


OLD_ROOT_MODE = 0o555  # Manifest.top of a manifest without its root: read-only, as archives are


@dataclass(frozen=True)
class Manifest:
    """An archive: its ARK, its entries sorted by path, where its CAS is, and its root
    directory's mode, mtime and attributes (an Entry with path ''; None in manifests
    written before the root was kept)."""

    ark: str
    entries: Entries
    created: float = 0.0
    cas_url: str | None = None
    token_url: str | None = None
    root: Entry | None = None

    def __init__(
        self,
        ark: str,
        entries: Iterable[Entry] | Entries,
        created: float = 0.0,
        cas_url: str | None = None,
        token_url: str | None = None,
        root: Entry | None = None,
    ) -> None:
        _check_ark(ark)
        columns = entries if isinstance(entries, Entries) else Entries.of(entries)
        if root is not None:
            check_root(root)
        values = (ark, columns, created, cas_url, token_url, root)
        for name, value in zip(self.__dataclass_fields__, values, strict=True):
            object.__setattr__(self, name, value)

    @property
    def top(self) -> Entry:
        """The root directory's entry, as every door shows it: root, or, in a manifest
        written before the root was kept, a directory of mode OLD_ROOT_MODE made when the
        manifest was."""
        if self.root is not None:
            return self.root
        return Entry("", Kind.DIR, 0, OLD_ROOT_MODE, int(self.created * 1e9))

    def entry(self, path: str) -> Entry | None:
        """The entry at path, or None ('' is the root, which has no entry)."""
        i = self.entries.position(path)
        return None if i is None else self.entries[i]

    def children(self, path: str) -> list[Entry]:
        """Entries directly inside directory path ('' for the root), in path order."""
        return [self.entries[i] for i in self.entries.children(path)]

    @property
    def files(self) -> list[Entry]:
        """The files, in path order (each_file makes them one at a time)."""
        return list(self.each_file())

    def each_file(self) -> Iterator[Entry]:
        """The files, in path order, each made as it is reached."""
        return (self.entries[i] for i in self.entries.files())

    @property
    def file_count(self) -> int:
        return self.entries.file_count

    @property
    def total_size(self) -> int:
        return self.entries.total_size

    def _head(self) -> dict[str, Any]:
        """The top-level fields of both forms, around their entries."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "ark": self.ark,
            "created": self.created,
            "cas_url": self.cas_url,
            "token_url": self.token_url,
        }

    def to_msgpack(self) -> bytes:
        return b"".join(self.msgpack_pieces())

    def msgpack_pieces(self) -> list[bytes]:
        """to_msgpack in pieces, the large columns among them as they are: written to a
        file one by one, a 1M-entry manifest is not copied (packb would copy it twice)."""
        document = self._head() | self.entries.to_packed()
        if self.root is not None:
            r = self.root
            document["root"] = [r.mode, r.mtime_ns, _packed_xattrs(r.xattrs)]
        pieces = [msgpack.Packer().pack_map_header(len(document))]
        for key, value in document.items():
            pieces.append(msgpack.packb(key))
            if isinstance(value, bytes) and len(value) > 0xFFFF:
                pieces += [bin_header(len(value)), value]
            else:
                pieces.append(msgpack.packb(value, use_bin_type=True))
        return pieces

    @classmethod
    def from_msgpack(cls, data: bytes | memoryview) -> "Manifest":
        _check_size(len(data))
        try:
            obj = msgpack.unpackb(data, raw=False, strict_map_key=False)
        except (ValueError, msgpack.UnpackException) as exc:
            raise ManifestError(f"manifest is not valid msgpack: {exc}") from None
        return cls._from_document(obj)

    @classmethod
    def from_msgpack_file(cls, data: FileSlice) -> "Manifest":
        """from_msgpack of bytes in a file, each column read as it is made: the parse never
        holds the whole document, nor more than one column's bytes, besides its columns."""
        _check_size(data.size)
        try:
            obj = read_map(data.file, data.start, data.size)  # columns stay in the file
        except ValueError as exc:
            raise ManifestError(f"manifest is not valid msgpack: {exc}") from None
        return cls._from_document(obj)

    @classmethod
    def _from_document(cls, obj: object) -> "Manifest":
        """The manifest of a decoded msgpack document."""
        head = _head(obj)
        assert isinstance(obj, dict)
        if obj.get("root") is not None:
            head["root"] = _packed_root(obj["root"])
        if obj["version"] >= 2:
            return cls(entries=Entries.from_packed(obj), **head)
        rows = obj.get("entries")
        if not isinstance(rows, list):
            raise ManifestError("manifest 'entries' must be a list")
        entries = []
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != len(ENTRY_FIELDS):
                raise ManifestError(f"manifest entry {i} must be a list of {len(ENTRY_FIELDS)}")
            entries.append(_entry(dict(zip(ENTRY_FIELDS, row, strict=True)), i))
        return cls(entries=entries, **head)

    def to_json(self) -> dict[str, Any]:
        """The JSON form, for people: hashes as hash strings (XET) and hex (SHA-256)."""
        root = {} if self.root is None else {"root": self.root.to_json()}
        return self._head() | root | {"entries": [e.to_json() for e in self.entries]}

    @classmethod
    def from_json(cls, obj: object) -> "Manifest":
        head = _head(obj)
        assert isinstance(obj, dict)
        if obj.get("root") is not None:
            if not isinstance(obj["root"], dict):
                raise ManifestError("manifest 'root' must be an object")
            head["root"] = _entry({"path": "", "kind": "dir", "size": 0} | obj["root"], -1)
        items = obj.get("entries")
        if not isinstance(items, list):
            raise ManifestError("manifest 'entries' must be a list")
        entries = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ManifestError(f"manifest entry {i} must be an object")
            item = dict(item)
            try:
                if item.get("xet_hash") is not None:
                    item["xet_hash"] = string_to_hash(item["xet_hash"])
                if item.get("sha256") is not None:
                    item["sha256"] = bytes.fromhex(item["sha256"])
            except (HashStringError, ValueError, TypeError):
                raise ManifestError(f"manifest entry {i} has a malformed hash") from None
            entries.append(_entry(item, i))
        return cls(entries=entries, **head)


def _check_size(size: int) -> None:
    if size > MAX_MANIFEST_SIZE:
        raise ManifestError(f"manifest of {size} bytes is over {MAX_MANIFEST_SIZE}")


def _head(obj: object) -> dict[str, Any]:
    """The checked top-level fields of a manifest mapping."""
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise ManifestError(f"not an arkfs manifest (no format tag {FORMAT!r})")
    version = obj.get("version")
    if not isinstance(version, int) or version < 1:
        raise ManifestError(f"manifest version {version!r} is not a positive integer")
    if version > VERSION:
        raise ManifestError(
            f"manifest version {version} is newer than this arkfs reads ({VERSION}): upgrade arkfs"
        )
    head = {k: obj.get(k) for k in ("ark", "created", "cas_url", "token_url")}
    if not isinstance(head["ark"], str):
        raise ManifestError("manifest 'ark' must be a string")
    if not isinstance(head["created"], int | float):
        raise ManifestError("manifest 'created' must be a number")
    for key in ("cas_url", "token_url"):
        if head[key] is not None and not isinstance(head[key], str):
            raise ManifestError(f"manifest {key!r} must be a string or null")
    return head


def _entry(item: dict[str, Any], i: int) -> Entry:
    """One entry of a version 1 row or a JSON object, its field types checked."""
    try:
        kind = Kind(str(item.get("kind")))
    except ValueError:
        raise ManifestError(f"manifest entry {i} has unknown kind {item.get('kind')!r}") from None
    values: dict[str, Any] = {f: item.get(f) for f in ENTRY_FIELDS}
    values["kind"] = kind
    if item.get("link") is not None:  # JSON only: version 1 rows have neither
        values["link"] = item["link"]
        if not isinstance(values["link"], str):
            raise ManifestError(f"manifest entry {i}: link must be a string")
    if item.get("xattrs"):
        values["xattrs"] = _xattrs(item["xattrs"])
    for key in ("size", "mode", "mtime_ns"):
        if not isinstance(values[key], int) or isinstance(values[key], bool):
            raise ManifestError(f"manifest entry {i}: {key} must be an integer")
    if not isinstance(values["path"], str):
        raise ManifestError(f"manifest entry {i}: path must be a string")
    for key in ("xet_hash", "sha256"):
        if values[key] is not None and not isinstance(values[key], bytes):
            raise ManifestError(f"manifest entry {i}: {key} must be binary")
    if values["target"] is not None and not isinstance(values["target"], str):
        raise ManifestError(f"manifest entry {i}: target must be a string")
    return Entry(**values)


def _packed_root(obj: object) -> Entry:
    """The root directory of a msgpack manifest's [mode, mtime_ns, attributes]."""
    if not (isinstance(obj, list) and len(obj) == 3 and all(type(v) is int for v in obj[:2])):
        raise ManifestError("manifest 'root' must be [mode, mtime_ns, attributes]")
    return Entry("", Kind.DIR, 0, obj[0], obj[1], xattrs=_xattrs(obj[2]))


def check_root(root: Entry) -> None:
    """Raise ManifestError unless root is a directory entry at path '' that fits the columns."""
    if root.path or root.kind is not Kind.DIR or not 0 <= root.mode <= 0o7777:
        raise ManifestError("manifest 'root' must be a directory with a mode of 0o7777 or less")
    if not -(1 << 63) <= root.mtime_ns < 1 << 63:
        raise ManifestError("manifest 'root' mtime out of range")
    for name, _ in root.xattrs:
        check_xattr_name(name, "manifest 'root'")


def _check_ark(ark: str) -> None:
    """Raise ManifestError unless ark is a normalized ark:NAAN/Name."""
    try:
        root = parse(ark)
    except ArkError as exc:
        raise ManifestError(f"manifest ARK {ark!r}: {exc}") from None
    if str(root) != ark or root.components or root.variants:
        raise ManifestError(f"manifest ARK {ark!r} must be a normalized ark:NAAN/Name")


def build(
    ark: str,
    entries: Iterable[Entry],
    created: float,
    cas_url: str | None = None,
    token_url: str | None = None,
    root: Entry | None = None,
    hashes: Hashes | None = None,
    onto: tuple[Entries, Iterable[int]] | None = None,
) -> Manifest:
    """A manifest of entries in any order (sorted here); a file without its hashes takes
    them from hashes (Entries.of). With onto (columns and positions to drop), entries
    replace those positions of the columns (Entries.merged)."""
    ordered = list(entries)
    sort_by_path(ordered, operator.attrgetter("path"))
    if onto is None:
        columns = Entries.of(ordered, hashes)
    else:
        columns = onto[0].merged(onto[1], ordered, hashes)
    return Manifest(ark, columns, created, cas_url, token_url, root)


def path_order(entry: Entry) -> bytes:
    """The key entries are sorted by: their paths as bytes."""
    return entry.path.encode("utf-8", "surrogateescape")


def sort_by_path(items: list[_T], path_of: Callable[[_T], str]) -> None:
    """Sort items in place in path_order of their paths. When every path is ASCII, the
    paths themselves sort in that order, and no bytes key is made per item (~100 MB at
    1,000,000; a surrogate escape sorts apart from its byte, hence the check)."""
    if all(path_of(item).isascii() for item in items):
        items.sort(key=path_of)
    else:
        items.sort(key=lambda item: path_of(item).encode("utf-8", "surrogateescape"))


def entry_ark(archive: Ark, path: str) -> Ark:
    """The ARK of the entry at path inside archive ('' is the archive itself)."""
    a = archive
    for name in path.split("/") if path else ():
        a = a.child(filename_to_qualifier(name))
    return a


def entry_path(archive: Ark, ark: Ark) -> str | None:
    """The manifest path ark names inside archive, or None when it is not inside it.

    archive is the ARK the archive is addressed by, ark:NAAN/Name or a version of it
    (`.../@v2`, arkfs.ark.version_qualifier); ark is inside it only under the same version.
    Variants are folded back into the last file name ('.v7.xsl'), the spelling people type.
    """
    try:
        (root, version), (inner, inner_version) = split_version(archive), split_version(ark)
    except VersionError:
        return None
    if (inner.naan, inner.name, inner_version) != (root.naan, root.name, version):
        return None
    try:
        names = [qualifier_to_filename(c) for c in inner.components]
    except ArkError:
        return None
    if inner.variants:
        if not names:
            return None
        names[-1] += "".join("." + v for v in inner.variants)
    return "/".join(names)


def entry_erc(archive_erc: Erc, archive: Ark, entry: Entry) -> Erc:
    """The ERC record of an entry: the archive's story, told of the part at entry.path."""
    what = f"{archive_erc.what or archive}: {filename_text(entry.path)}"  # where: is exact
    return Erc(
        who=archive_erc.who,
        what=what,
        when=archive_erc.when,
        where=str(entry_ark(archive, entry.path)),
        support=archive_erc.support,  # the archive's commitment covers its parts
    )
