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
Version N of an archive is `ark:12345/x6np1wh8k/@vN` (arkfs.ark.versions): entry_ark and
entry_path take the archive's ARK with that qualifier, and name entries under it.

The msgpack form is a map with a `format` tag and a `version`; entries are arrays in the
order of ENTRY_FIELDS to stay small for trees of 100,000 files. A reader refuses a newer
version with a message that says to upgrade.

This module imports arkfs.xet.hashing for the hash-string form of XET hashes in JSON; both
are pure format layers.
"""

import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import msgpack

from arkfs.ark.erc import Erc
from arkfs.ark.errors import ArkError, ManifestError, VersionError
from arkfs.ark.filenames import filename_to_qualifier, qualifier_to_filename
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.ark.versions import split_version
from arkfs.xet.errors import HashStringError
from arkfs.xet.hashing import hash_to_string, string_to_hash

FORMAT = "arkfs-manifest"
VERSION = 1
ENTRY_FIELDS = ("path", "kind", "size", "mode", "mtime_ns", "xet_hash", "sha256", "target")
MAX_MANIFEST_SIZE = 256 * 1024 * 1024


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
        return item

    @property
    def st_mode(self) -> int:
        """mode with the file type bits, as stat() gives it."""
        kind_bits = {Kind.DIR: stat.S_IFDIR, Kind.FILE: stat.S_IFREG, Kind.SYMLINK: stat.S_IFLNK}
        return kind_bits[self.kind] | self.mode


@dataclass(frozen=True)
class Manifest:
    """An archive: its ARK, its entries sorted by path, and where its CAS is."""

    ark: str
    entries: tuple[Entry, ...]
    created: float = 0.0
    cas_url: str | None = None
    token_url: str | None = None
    _by_path: dict[str, Entry] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_path", {e.path: e for e in self.entries})
        _validate(self)

    def entry(self, path: str) -> Entry | None:
        """The entry at path, or None ('' is the root, which has no entry)."""
        return self._by_path.get(path)

    def children(self, path: str) -> list[Entry]:
        """Entries directly inside directory path ('' for the root), in path order."""
        return [e for e in self.entries if e.parent == path]

    @property
    def files(self) -> list[Entry]:
        return [e for e in self.entries if e.kind is Kind.FILE]

    @property
    def total_size(self) -> int:
        return sum(e.size for e in self.entries if e.kind is Kind.FILE)

    def _document(self, entries: list[Any]) -> dict[str, Any]:
        """The top-level mapping of both forms around their entries."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "ark": self.ark,
            "created": self.created,
            "cas_url": self.cas_url,
            "token_url": self.token_url,
            "entries": entries,
        }

    def to_msgpack(self) -> bytes:
        rows = [[getattr(e, f) for f in ENTRY_FIELDS] for e in self.entries]
        packed: bytes = msgpack.packb(self._document(rows), use_bin_type=True)
        return packed

    @classmethod
    def from_msgpack(cls, data: bytes) -> "Manifest":
        if len(data) > MAX_MANIFEST_SIZE:
            raise ManifestError(f"manifest of {len(data)} bytes is over {MAX_MANIFEST_SIZE}")
        try:
            obj = msgpack.unpackb(data, raw=False, strict_map_key=True)
        except (ValueError, msgpack.UnpackException) as exc:
            raise ManifestError(f"manifest is not valid msgpack: {exc}") from None
        head = _head(obj)
        rows = head.pop("entries")
        if not isinstance(rows, list):
            raise ManifestError("manifest 'entries' must be a list")
        entries = []
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != len(ENTRY_FIELDS):
                raise ManifestError(f"manifest entry {i} must be a list of {len(ENTRY_FIELDS)}")
            entries.append(_entry(dict(zip(ENTRY_FIELDS, row, strict=True)), i))
        return cls(entries=tuple(entries), **head)

    def to_json(self) -> dict[str, Any]:
        """The JSON form, for people: hashes as hash strings (XET) and hex (SHA-256)."""
        return self._document([e.to_json() for e in self.entries])

    @classmethod
    def from_json(cls, obj: object) -> "Manifest":
        head = _head(obj)
        items = head.pop("entries")
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
        return cls(entries=tuple(entries), **head)


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
    head = {k: obj.get(k) for k in ("ark", "created", "cas_url", "token_url", "entries")}
    if not isinstance(head["ark"], str):
        raise ManifestError("manifest 'ark' must be a string")
    if not isinstance(head["created"], int | float):
        raise ManifestError("manifest 'created' must be a number")
    for key in ("cas_url", "token_url"):
        if head[key] is not None and not isinstance(head[key], str):
            raise ManifestError(f"manifest {key!r} must be a string or null")
    return head


def _entry(item: dict[str, Any], i: int) -> Entry:
    try:
        kind = Kind(str(item.get("kind")))
    except ValueError:
        raise ManifestError(f"manifest entry {i} has unknown kind {item.get('kind')!r}") from None
    values: dict[str, Any] = {f: item.get(f) for f in ENTRY_FIELDS}
    values["kind"] = kind
    for key in ("size", "mode", "mtime_ns"):
        if not isinstance(values[key], int) or isinstance(values[key], bool):
            raise ManifestError(f"manifest entry {i}: {key} must be an integer")
    if not isinstance(values["path"], str):
        raise ManifestError(f"manifest entry {i}: path must be a string")
    return Entry(**values)


def _validate(m: Manifest) -> None:
    """Raise ManifestError unless the entries form one consistent tree under the root."""
    try:
        root = parse(m.ark)
    except ArkError as exc:
        raise ManifestError(f"manifest ARK {m.ark!r}: {exc}") from None
    if str(root) != m.ark or root.components or root.variants:
        raise ManifestError(f"manifest ARK {m.ark!r} must be a normalized ark:NAAN/Name")
    previous = None
    for e in m.entries:
        where = f"manifest entry {e.path!r}"
        if previous is not None and e.path <= previous:
            raise ManifestError(f"{where}: entries must be sorted by path, without repeats")
        previous = e.path
        names = e.path.split("/")
        try:
            for name in names:
                filename_to_qualifier(name)
        except ArkError:
            raise ManifestError(f"{where}: not a relative path of file names") from None
        parent = m.entry(e.parent)
        if e.parent and (parent is None or parent.kind is not Kind.DIR):
            raise ManifestError(f"{where}: its parent directory is not listed")
        if e.size < 0 or not 0 <= e.mode <= 0o7777 or e.mtime_ns < 0:
            raise ManifestError(f"{where}: size, mode or mtime out of range")
        is_file = e.kind is Kind.FILE
        if is_file != (isinstance(e.xet_hash, bytes) and len(e.xet_hash) == 32):
            raise ManifestError(f"{where}: a file, and only a file, has a 32-byte XET hash")
        if e.sha256 is not None and (not is_file or len(e.sha256) != 32):
            raise ManifestError(f"{where}: SHA-256 must be 32 bytes, on a file")
        if (e.kind is Kind.SYMLINK) != isinstance(e.target, str):
            raise ManifestError(f"{where}: a symlink, and only a symlink, has a target")


def build(
    ark: str,
    entries: Iterable[Entry],
    created: float,
    cas_url: str | None = None,
    token_url: str | None = None,
) -> Manifest:
    """A manifest of entries in any order (sorted here)."""
    return Manifest(ark, tuple(sorted(entries, key=lambda e: e.path)), created, cas_url, token_url)


def entry_ark(archive: Ark, path: str) -> Ark:
    """The ARK of the entry at path inside archive ('' is the archive itself)."""
    a = archive
    for name in path.split("/") if path else ():
        a = a.child(filename_to_qualifier(name))
    return a


def entry_path(archive: Ark, ark: Ark) -> str | None:
    """The manifest path ark names inside archive, or None when it is not inside it.

    archive is the ARK the archive is addressed by, ark:NAAN/Name or a version of it
    (`.../@v2`, arkfs.ark.versions); ark is inside it only under the same version.
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
    what = f"{archive_erc.what or archive}: {entry.path}"
    return Erc(
        who=archive_erc.who,
        what=what,
        when=archive_erc.when,
        where=str(entry_ark(archive, entry.path)),
        support=archive_erc.support,  # the archive's commitment covers its parts
    )
