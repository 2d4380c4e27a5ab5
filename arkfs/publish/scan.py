"""Walk a directory tree into manifest entries (hashes are filled in later)."""

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from arkfs.archive.manifest import Entry, Kind
from arkfs.ark.errors import ArkError
from arkfs.ark.filenames import filename_to_qualifier
from arkfs.publish.progress import Progress


class ScanError(Exception):
    """The tree cannot be published as it is; the message says which path and why."""


@dataclass(frozen=True, slots=True)
class Found:
    """An entry of the tree and, for a file, where to read it."""

    entry: Entry
    source: Path


def scan(root: Path, progress: Progress | None = None) -> tuple[list[Found], list[str]]:
    """Every directory, file and symlink below root, sorted by path; and what was skipped.
    Each file found is counted in progress, if given."""
    if not root.is_dir():
        raise ScanError(f"{root} is not a directory: publish takes a directory")
    found: list[Found] = []
    skipped: list[str] = []
    stack = [("", root)]
    while stack:
        rel, here = stack.pop()
        try:
            names = sorted(os.listdir(here))
        except OSError as exc:
            raise ScanError(f"cannot list {here}: {exc.strerror}") from None
        for name in names:
            path = here / name
            sub = f"{rel}/{name}" if rel else name
            try:
                filename_to_qualifier(name)
            except ArkError as exc:
                raise ScanError(f"{path}: {exc}") from None
            st = path.lstat()
            mode, mtime = stat.S_IMODE(st.st_mode), st.st_mtime_ns
            if stat.S_ISDIR(st.st_mode):
                found.append(Found(Entry(sub, Kind.DIR, 0, mode, mtime), path))
                stack.append((sub, path))
            elif stat.S_ISREG(st.st_mode):
                found.append(Found(Entry(sub, Kind.FILE, st.st_size, mode, mtime), path))
                if progress is not None:
                    progress.files += 1
                    progress.total += st.st_size
            elif stat.S_ISLNK(st.st_mode):
                target = os.readlink(path)
                found.append(
                    Found(
                        Entry(sub, Kind.SYMLINK, len(target), mode, mtime, None, None, target), path
                    )
                )
            else:
                skipped.append(f"{sub}: not a regular file, directory or symlink")
    found.sort(key=lambda f: f.entry.path)
    return found, skipped
