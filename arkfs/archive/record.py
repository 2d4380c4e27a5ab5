"""A bound archive as every layer passes it around: manifest, ERC record, when it was bound."""

from dataclasses import dataclass
from functools import cached_property

from arkfs.archive.manifest import Manifest
from arkfs.ark.erc import Erc
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse


@dataclass(frozen=True)
class Archive:
    """A bound archive: its manifest, its ERC record, and when it was bound (Unix time)."""

    manifest: Manifest
    erc: Erc
    updated: float

    @cached_property
    def ark(self) -> Ark:
        """The ARK the archive is bound to, parsed from its manifest."""
        return parse(self.manifest.ark)
