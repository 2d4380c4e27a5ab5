"""The local index of a source tree: what each file hashed to when its stat was what it is.

Like git's index, it lets a republish skip reading files whose size, mtime_ns, ctime_ns and
inode are as they were. One index per (target, tree), under the XDG state directory, so a
hash found for one store is never trusted for another; it is written whole to a temporary
file and renamed, so a crash leaves the old index or the new one, never half of one.

A file is recorded only if its ctime is older than the moment its read began by more than
RACY_NS: a write in the same clock tick as the stat that was recorded could otherwise leave
size and times unchanged (git's "racily clean" entries).

Beside the rows, a small file remembers the digest of the last scan published (scan.Scanned)
and the version it was published as (or found equal to): while that version is still the
ARK's latest, a tree that scans to that digest again has nothing to publish, and no row
needs to be read or looked up. A third file keeps that scan's rows (what its digest is
of): a tree that scans otherwise makes entries only for the rows that differ, and carries
the latest version's entries at the other paths (Scanned.changes).
"""

import hashlib
import os
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgpack

from arkfs.util.atomic import write_atomic

if TYPE_CHECKING:
    from arkfs.archive.record import VersionInfo

RACY_NS = 100_000_000  # more than the coarse clock's tick that stamps ctime
SAVE_ROWS = 4096  # rows of the index written at a time
FORMAT = 2  # 1 was JSON with hex hashes: 100,000 rows took 0.3 s to parse, ~450 B each
_KEY = struct.Struct("<QqqQ")  # a row starts with its stat key: size, mtime, ctime, inode
_PACKED = struct.Struct("<QqqQ32s32s")  # a row: the stat key, the XET hash and SHA-256


class StatKey(NamedTuple):
    """What says a file is unchanged: size, mtime_ns, ctime_ns and inode (a tuple: one is
    made for every file a publish scans)."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @classmethod
    def of(cls, st: os.stat_result) -> "StatKey":
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class Version(NamedTuple):
    """A version as the tree index remembers it: its ARK, number and bind time (a version
    bound again, in a store made anew, has another bind time)."""

    ark: str
    version: int
    created: float

    @classmethod
    def of(cls, v: "VersionInfo") -> "Version":
        return cls(v.ark, v.version, v.created)


class Known(NamedTuple):
    """The hashes a file had: its XET file hash and SHA-256 (a tuple: one is made for
    every file a republish looks up)."""

    xet_hash: bytes
    sha256: bytes


def state_dir() -> Path:
    """$XDG_STATE_HOME/arkfs, else ~/.local/state/arkfs."""
    value = os.environ.get("XDG_STATE_HOME")
    if value and Path(value).is_absolute():
        return Path(value) / "arkfs"
    return Path.home() / ".local/state/arkfs"


def index_path(target: str, tree: Path) -> Path:
    """Where the index of tree, published to target (a server URL or a store), is kept."""
    key = f"{target}\n{os.path.abspath(tree)}"
    name = hashlib.sha256(key.encode()).hexdigest()[:32] + ".msgpack"
    return state_dir() / "publish-index" / name


class TreeIndex:
    """Path -> (stat key, hashes), loaded from and saved to one msgpack file: a map of each
    path (UTF-8 bytes) to its row, _PACKED (a bytes object per file, compared and carried
    forward as it is, never decoded whole). The rows are loaded when first needed."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._loaded: dict[str, bytes] | None = None if path is not None else {}
        self._new: dict[str, bytes] = {}  # rows kept
        # Rows recorded: their paths, and the rows one after another (a bytes object and a
        # map slot per row took ~65 bytes more, 65 MB at 1,000,000 files).
        self._recorded: list[str] = []
        self._recorded_rows = bytearray()
        self._changed = False  # a row recorded, or one carry dropped

    @property
    def _old(self) -> dict[str, bytes]:
        if self._loaded is None:
            assert self.path is not None
            self._loaded = _load(self.path)
        return self._loaded

    def published(self, digest: bytes) -> Version | None:
        """The version a tree scanned to digest was last published as, or found equal to;
        None if it is not the last scan remembered."""
        if self.path is None:
            return None
        try:
            body = msgpack.unpackb(self._scan_path().read_bytes(), raw=False)
            if body.get("format") == FORMAT and body["scan"] == digest:
                return Version(str(body["ark"]), int(body["version"]), float(body["created"]))
        except (OSError, ValueError, TypeError, KeyError, AttributeError, msgpack.UnpackException):
            pass  # when in doubt, look the files up
        return None

    def remember(self, digest: bytes | None, version: Version) -> None:
        """Remember, atomically, that a tree scanned to digest (None: a scan too recent to
        trust, not remembered) is version, with the rows staged for it."""
        if self.path is None or digest is None or self.published(digest) == version:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._staged().exists():  # the rows first: a crash between leaves rows that
            os.replace(self._staged(), self._rows_path())  # fail remembered()'s check
        body = {"format": FORMAT, "scan": digest, **version._asdict()}
        write_atomic(self._scan_path(), msgpack.packb(body, use_bin_type=True))

    def stage(self, rows: bytes) -> None:
        """Keep the packed rows of the scan being published until remember names their
        version."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self._staged(), rows)

    def remembered(self) -> tuple[Version, bytes] | None:
        """The version the last scan remembered was published as, and that scan's packed
        rows; None unless both are there and the rows are what its digest is of."""
        if self.path is None:
            return None
        try:
            body = msgpack.unpackb(self._scan_path().read_bytes(), raw=False)
            rows = self._rows_path().read_bytes()
            if body.get("format") != FORMAT or scan_digest(rows) != body["scan"]:
                return None
            return Version(str(body["ark"]), int(body["version"]), float(body["created"])), rows
        except (OSError, ValueError, TypeError, KeyError, AttributeError, msgpack.UnpackException):
            return None  # when in doubt, make every entry

    def forget_rows(self) -> None:
        """Forget the rows of the scan remembered (the next publish makes every entry)."""
        if self.path is not None:
            self._rows_path().unlink(missing_ok=True)

    def _scan_path(self) -> Path:
        assert self.path is not None
        return self.path.with_suffix(".scan")

    def _rows_path(self) -> Path:
        assert self.path is not None
        return self.path.with_suffix(".rows")

    def _staged(self) -> Path:
        assert self.path is not None
        return self.path.with_suffix(".rows-staged")

    def lookup(self, rel: str, key: StatKey | None) -> Known | None:
        """The hashes of rel if it was recorded with exactly this stat key."""
        row = self._old.get(rel)
        if key is None or row is None or len(row) != _PACKED.size:  # rows are checked here,
            return None  # one at a time, not all at load
        if row[: _KEY.size] != _KEY.pack(*key):
            return None
        return Known(row[_KEY.size : _KEY.size + 32], row[_KEY.size + 32 :])

    def carry(self, dropped: set[str]) -> None:
        """Carry every row but those of dropped into the next index (the files a republish
        carries from the latest version, unread and not looked up)."""
        self._new = self._old  # taken over, not copied: nothing reads the old rows after
        for rel in dropped:
            self._changed |= self._new.pop(rel, None) is not None

    def keep(self, rel: str) -> None:
        """Carry rel's entry, found unchanged by lookup, into the next index."""
        self._new[rel] = self._old[rel]

    def record(self, rel: str, key: StatKey, known: Known, read_began_ns: int) -> None:
        """Record what rel hashed to, read from read_began_ns with this stat before and
        after; a file changed too recently to be told apart from a later write is not."""
        if key.ctime_ns < read_began_ns - RACY_NS:
            self._recorded.append(rel)
            self._recorded_rows += _PACKED.pack(*key, known.xet_hash, known.sha256)
            self._changed = True

    def save(self) -> None:
        """Write the entries kept and recorded in this publish, atomically (not at all if
        they are the entries loaded), and let go of every row: saving is a publish's last
        use of them (~110 MB at 1,000,000 files, freed before its manifest is built)."""
        if self.path is not None and (self._changed or len(self._new) != len(self._old)):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            rows = _packed(len(self._new) + len(self._recorded), self._rows())
            write_atomic(self.path, rows)
            self.path.with_suffix(".json").unlink(missing_ok=True)  # format 1's, replaced
        # else nothing changed: every row kept is an old one, so all were kept
        self._loaded, self._new, self._recorded, self._recorded_rows = {}, {}, [], bytearray()

    def _rows(self) -> Iterator[tuple[str, bytes]]:
        """The rows kept, then the rows recorded."""
        yield from self._new.items()
        rows = memoryview(self._recorded_rows)
        for i, rel in enumerate(self._recorded):
            yield rel, bytes(rows[i * _PACKED.size : (i + 1) * _PACKED.size])


def _packed(count: int, rows: Iterator[tuple[str, bytes]]) -> Iterator[bytes]:
    """The index file, {"format": FORMAT, "files": {path as bytes: row}} as packb writes
    it, in parts of SAVE_ROWS rows: packb of the whole map held every path encoded and the
    whole body at once (~250 MB for 1,000,000 files, the publish's peak)."""
    packer = msgpack.Packer(use_bin_type=True)
    head = [packer.pack_map_header(2), packer.pack("format"), packer.pack(FORMAT)]
    yield b"".join([*head, packer.pack("files"), packer.pack_map_header(count)])
    part: list[bytes] = []
    for rel, row in rows:
        part += [packer.pack(rel.encode("utf-8", "surrogateescape")), packer.pack(row)]
        if len(part) >= 2 * SAVE_ROWS:
            yield b"".join(part)
            part = []
    yield b"".join(part)


def _load(path: Path) -> dict[str, bytes]:
    """The rows of an index file; none if it is missing or not one this version wrote (an
    index only saves reading: when in doubt, read). lookup checks each row it uses."""
    try:
        body = msgpack.unpackb(path.read_bytes(), raw=False)
        files = body["files"] if body.get("format") == FORMAT else {}
        return {
            rel.decode("utf-8", "surrogateescape"): row
            for rel, row in files.items()
            if type(rel) is bytes and type(row) is bytes
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError, msgpack.UnpackException):
        return {}


def scan_digest(packed: bytes) -> bytes:
    """The digest of a scan's packed rows (scan.Scanned.digest)."""
    return hashlib.blake2b(packed, digest_size=32).digest()


def now_ns() -> int:
    """The wall clock, as file times are stamped."""
    return time.time_ns()
