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
import time
from dataclasses import dataclass
from pathlib import Path

RACY_NS = 100_000_000  # more than the coarse clock's tick that stamps ctime
FORMAT = 1


@dataclass(frozen=True, slots=True)
class StatKey:
    """What says a file is unchanged: size, mtime_ns, ctime_ns and inode."""

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


class TreeIndex:
    """Path -> (stat key, hashes), loaded from and saved to one file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._old: dict[str, tuple[StatKey, Known]] = {}
        self._new: dict[str, tuple[StatKey, Known]] = {}
        if path is not None:
            self._old = _load(path)

    def lookup(self, rel: str, key: StatKey | None) -> Known | None:
        """The hashes of rel if it was recorded with exactly this stat key."""
        item = self._old.get(rel)
        if key is None or item is None or item[0] != key:
            return None
        return item[1]

    def keep(self, rel: str, key: StatKey, known: Known) -> None:
        """Carry an unchanged entry into the next index."""
        self._new[rel] = (key, known)

    def record(self, rel: str, key: StatKey, known: Known, read_began_ns: int) -> None:
        """Record what rel hashed to, read from read_began_ns with this stat before and
        after; a file changed too recently to be told apart from a later write is not."""
        if key.ctime_ns < read_began_ns - RACY_NS:
            self._new[rel] = (key, known)

    def save(self) -> None:
        """Write the entries kept and recorded in this publish, atomically."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = {
            "format": FORMAT,
            "files": {
                rel: [k.size, k.mtime_ns, k.ctime_ns, k.ino, v.xet_hash.hex(), v.sha256.hex()]
                for rel, (k, v) in self._new.items()
            },
        }
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        with tmp.open("w", encoding="utf-8") as f:
            json.dump(body, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


def _load(path: Path) -> dict[str, tuple[StatKey, Known]]:
    """The entries of an index file; none if it is missing or not one this version wrote
    (an index only saves reading: when in doubt, read)."""
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        if body.get("format") != FORMAT:
            return {}
        return {
            rel: (StatKey(*item[:4]), Known(bytes.fromhex(item[4]), bytes.fromhex(item[5])))
            for rel, item in body["files"].items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError, IndexError):
        return {}


def now_ns() -> int:
    """The wall clock, as file times are stamped."""
    return time.time_ns()
