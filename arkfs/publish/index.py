"""The local index of a source tree: what each file hashed to when its stat was what it is.

Like git's index, it lets a republish skip reading files whose size, mtime_ns, ctime_ns and
inode are as they were. One index per (target, tree), under the XDG state directory, so a
hash found for one store is never trusted for another; it is written whole to a temporary
file and renamed, so a crash leaves the old index or the new one, never half of one.

A file is recorded only if its ctime is older than the moment its read began by more than
RACY_NS: a write in the same clock tick as the stat that was recorded could otherwise leave
size and times unchanged (git's "racily clean" entries).
"""

import hashlib
import json
import os
import struct
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

RACY_NS = 100_000_000  # more than the coarse clock's tick that stamps ctime
FORMAT = 1
_PACKED = struct.Struct("<QqqQ32s32s")  # a row recorded: size, mtime, ctime, inode, hashes


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


@dataclass(frozen=True, slots=True)
class Known:
    """The hashes a file had: its XET file hash and SHA-256."""

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
    return state_dir() / "publish-index" / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


Row = list[Any]  # size, mtime_ns, ctime_ns, inode, XET hash (hex), SHA-256 (hex)


class TreeIndex:
    """Path -> (stat key, hashes), loaded from and saved to one file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._old: dict[str, Row] = {}
        self._new: dict[str, Row | bytes] = {}  # rows kept, and rows recorded (packed)
        self._recorded = False
        if path is not None:
            self._old = _load(path)

    def lookup(self, rel: str, key: StatKey | None) -> Known | None:
        """The hashes of rel if it was recorded with exactly this stat key."""
        row = self._old.get(rel)
        if key is None or type(row) is not list or len(row) != 6:  # rows are checked here,
            return None  # one at a time, not all at load
        if tuple(row[:4]) != key:
            return None
        try:
            return Known(bytes.fromhex(row[4]), bytes.fromhex(row[5]))
        except (TypeError, ValueError):
            return None

    def keep(self, rel: str) -> None:
        """Carry rel's entry, found unchanged by lookup, into the next index."""
        self._new[rel] = self._old[rel]

    def record(self, rel: str, key: StatKey, known: Known, read_began_ns: int) -> None:
        """Record what rel hashed to, read from read_began_ns with this stat before and
        after; a file changed too recently to be told apart from a later write is not."""
        if key.ctime_ns < read_began_ns - RACY_NS:  # packed: 1,000,000 of them are kept
            self._new[rel] = _PACKED.pack(*key, known.xet_hash, known.sha256)
            self._recorded = True

    def save(self) -> None:
        """Write the entries kept and recorded in this publish, atomically (not at all if
        they are the entries loaded)."""
        if self.path is None or (not self._recorded and self._new.keys() == self._old.keys()):
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rows = {rel: _row(row) for rel, row in self._new.items()}
        body = json.dumps({"format": FORMAT, "files": rows}, separators=(",", ":"))
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def _row(row: Row | bytes) -> Row:
    """A row as the index file holds it: the stat key, then both hashes in hex."""
    if not isinstance(row, bytes):
        return row
    *key, xet, sha = _PACKED.unpack(row)
    return [*key, xet.hex(), sha.hex()]


def _load(path: Path) -> dict[str, Row]:
    """The rows of an index file; none if it is missing or not one this version wrote (an
    index only saves reading: when in doubt, read). lookup checks each row it uses."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        files = body["files"] if body.get("format") == FORMAT else {}
        return files if isinstance(files, dict) else {}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def now_ns() -> int:
    """The wall clock, as file times are stamped."""
    return time.time_ns()
