"""What changed between two versions of an archive: files added, removed and changed.

Files are compared by XET file hash, so a file whose bytes are the same is unchanged
whatever its mtime or mode; directories and symlinks are not files here.
"""

from dataclasses import dataclass

from arkfs.archive.manifest import Manifest


@dataclass(frozen=True)
class Changes:
    """The paths of files added, removed and changed, each sorted."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()


def changes(old: Manifest | None, new: Manifest) -> Changes:
    """What new changes against old (None: nothing before, so every file is added)."""
    before = {e.path: e.xet_hash for e in old.files} if old is not None else {}
    after = {e.path: e.xet_hash for e in new.files}
    return Changes(
        added=tuple(sorted(after.keys() - before.keys())),
        removed=tuple(sorted(before.keys() - after.keys())),
        changed=tuple(sorted(p for p in after.keys() & before.keys() if after[p] != before[p])),
    )
