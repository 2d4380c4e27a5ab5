"""Walk a directory tree into manifest entries (hashes are filled in later).

Everything that would make the tree unpublishable, or that the mount would show other than
the tree says, is found here, before any hashing: names no ARK can carry, a root entry
named like a version, attributes inside arkfs's own namespaces, and entries the manifest
would refuse (check_publishable, which the publisher runs before it reads a file; when
the tree index knows every file, building the manifest checks the same). What is
published but worth a word (a real `x?info` beside `x`, symlinks that leave the tree or
dangle) comes back as warnings.
"""

import errno
import os
import posixpath
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

import msgpack

from arkfs.archive.manifest import (
    Entries,
    Entry,
    Kind,
    Xattrs,
    check_root,
    check_xattr_name,
    path_order,
    sort_by_path,
)
from arkfs.ark.errors import ArkError, ManifestError
from arkfs.ark.filenames import check_filename
from arkfs.ark.version_qualifier import version_of_name
from arkfs.publish import VERSION_NAMES_OPTION
from arkfs.publish.index import RACY_NS, StatKey, now_ns, scan_digest
from arkfs.publish.progress import Progress

INFLECTIONS = ("?info", "??")  # THUMP: a name ending so is read as its base's record
# What the walk keeps of an entry, and its digest takes: path, st_mode, size, mtime_ns,
# ctime_ns, inode, link count, device, and a symlink's target.
_Row = tuple[str, int, int, int, int, int, int, int, str | None]
_ROW_FIELDS = 9


class ScanError(Exception):
    """The tree cannot be published as it is; the message says which path and why."""


class Found(NamedTuple):
    """An entry of the tree below base (the tree's directory) and, for a file, its stat at
    scan (a tuple: one is made for every entry, all sharing one base)."""

    entry: Entry
    base: str
    key: StatKey | None = None

    @property
    def source(self) -> str:
        """Where to read the entry (made when read, not kept for every file)."""
        return f"{self.base}/{self.entry.path}"


@dataclass
class Scanned:
    """What scan found: the root directory, the files' count and bytes, what was skipped,
    warning lines, and the symlinks that leave the tree or dangle: path, target, why.

    digest stands for everything the walk saw (each path with its stat: type, mode, size,
    mtime_ns, ctime_ns, inode, link count, device; link targets; the root's attributes):
    a tree that scans to the same digest publishes to the same manifest (an attribute
    set or removed changes its entry's ctime). It is None when an entry changed too
    recently to be told apart from a later write (index.RACY_NS)."""

    root: Entry
    base: str
    # Each directory's listing: its path -> its rows, packed as the tree index keeps them
    # (about 57 bytes a row at 1,000,000 files, where a row of Python objects takes 460).
    listings: dict[str, bytes] = field(default_factory=dict, repr=False)
    digest: bytes | None = None
    packed: bytes | None = field(default=None, repr=False)  # what digest is of
    files: int = 0
    total: int = 0  # the files' bytes
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    outside_links: list[dict[str, str]] = field(default_factory=list)

    @cached_property
    def found(self) -> list[Found]:
        """The entries, sorted by path, made (with their attributes read) when first asked
        for: an unchanged tree told by its digest needs none. ScanError for an attribute
        inside arkfs's own namespaces."""
        rows = (row for listing in self.listings.values() for row in _listing(listing))
        found = _entries(self.base, rows)
        self.listings = {}
        return found

    def changes(self, remembered: bytes) -> "Changes | None":
        """What differs from a remembered scan (its packed rows): the entries of the rows
        new or changed, with their attributes read, and the remembered paths that are gone
        or changed. A row as it was is an entry as it was: a write, chmod or attribute set
        changes ctime, and the remembered scan was not racy (RACY_NS). Listings packed the
        same are skipped whole. None if the rows are not this version's, or a hard-linked
        file changed (publish those whole). ScanError as found gives it."""
        try:
            _, pairs = _unpacked(remembered)
            old = {rel: chunk for rel, chunk in pairs if type(chunk) is bytes}
            changed: list[_Row] = []
            dropped: set[str] = set()
            for rel, chunk in self.listings.items():
                was = old.pop(rel, None)
                if was != chunk:
                    rows, before = _listing(chunk), _listing(was) if was else ()
                    kept, now = set(before), set(rows)
                    changed += [row for row in rows if row not in kept]
                    dropped.update(row[0] for row in before if row not in now)
            for chunk in old.values():  # directories gone
                dropped.update(row[0] for row in _listing(chunk))
        except (ValueError, TypeError, msgpack.UnpackException):
            return None
        if any(row[6] > 1 and not stat.S_ISDIR(row[1]) for row in changed):  # link count
            return None
        return Changes(_entries(self.base, changed), dropped)


@dataclass
class Changes:
    """A tree's entries that differ from a remembered scan, and the remembered paths to
    drop (gone, or changed: their entries are among found)."""

    found: list[Found]
    dropped: set[str]


def scan(
    root: Path, progress: Progress | None = None, allow_version_names: bool = False
) -> Scanned:
    """Walk every directory, file and symlink below root (their entries are made when
    Scanned.found is first read), and note what was skipped. Each file found is counted in
    progress, if given. A root entry named like a version (`@v1`) is refused unless
    allow_version_names: the mount and the resolver show version 1 there, and the entry
    only as `ARKDIR/@vN/@v1`."""
    if not root.is_dir():
        raise ScanError(f"{root} is not a directory: publish takes a directory")
    began = now_ns()
    st = root.stat()
    mode, mtime = stat.S_IMODE(st.st_mode), st.st_mtime_ns
    top = Entry("", Kind.DIR, 0, mode, mtime, xattrs=_xattrs(str(root)))
    root_row = (st.st_mode, mtime, st.st_ctime_ns, top.xattrs)
    base = str(root)
    scanned = Scanned(top, base)
    newest = root_row[2]  # the latest ctime_ns seen
    stack = [("", base)]
    while stack:
        rel, here = stack.pop()
        try:
            with os.scandir(here) as listing:
                items = sorted(listing, key=_name)
        except OSError as exc:
            raise ScanError(f"cannot list {here}: {exc.strerror}") from None
        names = {item.name for item in items}
        rows: list[_Row] = []
        for item in items:  # per entry: one lstat, no Path (issue 26)
            name = item.name
            sub = f"{rel}/{name}" if rel else name
            try:
                check_filename(name)
            except ArkError as exc:
                raise ScanError(f"{item.path}: {exc}") from None
            if not rel:
                _check_root_name(item.path, name, allow_version_names)
            if name.endswith(INFLECTIONS):
                _check_inflection(scanned, names, name, sub)
            try:
                st = item.stat(follow_symlinks=False)
            except OSError as exc:
                raise ScanError(f"cannot stat {item.path}: {exc.strerror}") from None
            target = None
            if stat.S_ISDIR(st.st_mode):
                stack.append((sub, item.path))
            elif stat.S_ISREG(st.st_mode):
                scanned.files += 1
                scanned.total += st.st_size
                if progress is not None:
                    progress.files += 1
                    progress.total += st.st_size
            elif stat.S_ISLNK(st.st_mode):
                target = os.readlink(item.path)
                _check_symlink(scanned, root, sub, target)
            else:
                scanned.skipped.append(f"{sub}: not a regular file, directory or symlink")
                continue
            size, mtime, ctime, ino = st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino
            rows.append((sub, st.st_mode, size, mtime, ctime, ino, st.st_nlink, st.st_dev, target))
            newest = max(newest, ctime)
        scanned.listings[rel] = msgpack.packb(rows, unicode_errors="surrogateescape")
    if newest < began - RACY_NS:
        listings = [[rel, listing] for rel, listing in scanned.listings.items()]
        packed = msgpack.packb([root_row, listings], unicode_errors="surrogateescape")
        scanned.digest, scanned.packed = scan_digest(packed), packed
    if scanned.outside_links:
        scanned.warnings.append(
            f"{len(scanned.outside_links)} symlinks leave the tree or dangle (published as "
            f"they are): {', '.join(_shown(link) for link in scanned.outside_links)}"
        )
    return scanned  # check_publishable is the publisher's to run, when it reads a file


def _entries(base: str, rows: Iterable[_Row]) -> list[Found]:
    """The entries of the rows the walk kept, with their attributes, sorted by path."""
    found: list[Found] = []
    inodes: dict[tuple[int, int], list[int]] = {}  # (device, inode) of files linked elsewhere
    for sub, st_mode, size, mtime, ctime, ino, nlink, dev, target in rows:
        mode = stat.S_IMODE(st_mode)
        if target is not None:
            entry = Entry(sub, Kind.SYMLINK, len(target), mode, mtime, target=target)
            found.append(Found(entry, base))
        elif stat.S_ISDIR(st_mode):
            entry = Entry(sub, Kind.DIR, 0, mode, mtime, xattrs=_xattrs(f"{base}/{sub}"))
            found.append(Found(entry, base))
        else:
            entry = Entry(sub, Kind.FILE, size, mode, mtime, xattrs=_xattrs(f"{base}/{sub}"))
            if nlink > 1:
                inodes.setdefault((dev, ino), []).append(len(found))
            found.append(Found(entry, base, StatKey(size, mtime, ctime, ino)))
    _link(found, inodes.values())
    sort_by_path(found, _path)
    return found


def _path(f: Found) -> str:
    return f.entry.path


def _unpacked(packed: bytes) -> Any:
    """A packed scan or listing as it was packed, arrays as tuples."""
    return msgpack.unpackb(packed, use_list=False, raw=False, unicode_errors="surrogateescape")


def _listing(chunk: bytes) -> tuple[_Row, ...]:
    """The rows of a packed listing; ValueError unless each is a row."""
    rows = _unpacked(chunk)
    if type(rows) is not tuple or not all(
        type(row) is tuple and len(row) == _ROW_FIELDS for row in rows
    ):
        raise ValueError("not a listing")
    return rows


def _name(item: os.DirEntry[str]) -> str:
    return item.name


def _check_root_name(path: str, name: str, allow_version_names: bool) -> None:
    """ScanError for a root entry named like a version, unless allow_version_names."""
    if not allow_version_names and version_of_name(name) is not None:
        raise ScanError(
            f"{path}: a root entry named like a version would be hidden behind version "
            f"{version_of_name(name)} (reachable only as ARKDIR/@vN/{name}); rename it, "
            f"or accept that with {VERSION_NAMES_OPTION}"
        )


def check_publishable(root: Entry, entries: Iterable[Entry]) -> None:
    """Raise ScanError if the manifest would refuse the tree's root and entries (a file's
    hashes, if not known yet, stand in as zeros): found now, not after hashing every byte."""
    stand_in = bytes(32)
    try:
        check_root(root)
        Entries.of(
            Entry(
                e.path, e.kind, e.size, e.mode, e.mtime_ns, stand_in, None, None, e.link, e.xattrs
            )
            if e.kind is Kind.FILE
            else e
            for e in entries
        )
    except ManifestError as exc:
        raise ScanError(str(exc)) from None


def _link(found: list[Found], groups: Iterable[list[int]]) -> None:
    """Mark each group of two or more files that are one inode as hard links of the first
    in path order (the manifest's order)."""
    for group in groups:
        if len(group) < 2:
            continue
        first = min((found[i].entry for i in group), key=path_order).path
        for i in group:
            found[i] = found[i]._replace(entry=replace(found[i].entry, link=first))


def _check_inflection(scanned: Scanned, names: set[str], name: str, sub: str) -> None:
    """A warning for a real `x?info` (or `x??`) beside `x`: it stands where x's record is."""
    for inflection in INFLECTIONS:
        base = name[: -len(inflection)]
        if name.endswith(inflection) and base and base in names:
            scanned.warnings.append(
                f"{sub} shadows the {inflection} record of {base!r}: it is published, and "
                f"{inflection} beside {base!r} reads this file, not the record"
            )
            return


def _check_symlink(scanned: Scanned, root: Path, sub: str, target: str) -> None:
    """Note a symlink whose target is absolute, climbs out of the tree, or does not exist."""
    inside = posixpath.normpath(posixpath.join(posixpath.dirname(sub), target))
    if target.startswith("/"):
        why = "absolute"
    elif inside == ".." or inside.startswith("../"):
        why = "leaves the tree"
    elif not (root / inside).exists():
        why = "dangles"
    else:
        return
    scanned.outside_links.append({"path": sub, "target": target, "why": why})


def _shown(link: dict[str, str]) -> str:
    return f"{link['path']} -> {link['target']} ({link['why']})"


def _xattrs(path: str) -> Xattrs:
    """The user.* extended attributes of path (not followed if it is a symlink); ScanError
    for one inside arkfs's own namespaces."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.ENOSYS):
            return ()
        raise ScanError(f"cannot list the extended attributes of {path}: {exc.strerror}") from None
    if not names:  # most files: no sorting, no list
        return ()
    pairs = []
    for name in sorted(n for n in names if n.startswith("user.")):
        try:
            check_xattr_name(name, str(path))
            pairs.append((name, os.getxattr(path, name, follow_symlinks=False)))
        except ManifestError as exc:
            raise ScanError(f"{exc}: remove or rename it to publish") from None
        except OSError as exc:
            raise ScanError(f"cannot read {name} of {path}: {exc.strerror}") from None
    return tuple(pairs)
