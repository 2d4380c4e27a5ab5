"""What changed between two versions of an archive: files added, removed and changed.

Files are compared by XET file hash, so a file whose bytes are the same is unchanged
whatever its mtime or mode; directories and symlinks are not files here.
"""

from dataclasses import dataclass

from arkfs.archive.manifest import Manifest
from arkfs.ark.erc import Erc


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


def metadata_change(old: Erc | None, new: Erc) -> list[str]:
    """The ERC element labels whose values differ between old and new, in new's order (the
    persistence statement as 'erc-support')."""
    if old is None:
        return []
    labels = [label for label, _ in old.elements() + new.elements()]
    differ = [
        label
        for label in dict.fromkeys(labels)
        if [v for lab, v in old.elements() if lab == label]
        != [v for lab, v in new.elements() if lab == label]
    ]
    return differ + ["erc-support"] * (old.support != new.support)
