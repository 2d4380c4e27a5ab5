"""A bound archive as every layer passes it around, and the versions it has.

Every bind makes a new immutable version of an archive (arkfs.ark.version_qualifier names them).
VersionInfo tells one version without its manifest and ERC: when it was bound, its
message, the version it follows, and its file and byte counts. Archive is one version
whole: manifest, ERC record and VersionInfo.
"""

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from arkfs.archive.manifest import Manifest
from arkfs.ark.erc import Erc
from arkfs.ark.errors import VersionError
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.util.sizes import human


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One version of an archive (normalized ark:NAAN/Name) without manifest and ERC."""

    ark: str
    version: int
    created: float  # Unix time the version was bound
    message: str
    follows: int | None  # the version it was bound after; None for v1
    files: int
    bytes: int

    @property
    def name(self) -> str:
        """How people call it: v1, v2, ..."""
        return f"v{self.version}"

    def summary(self) -> str:
        """One line: name, time (UTC), files, size and message, e.g. for `user.ark.versions`."""
        when = datetime.fromtimestamp(self.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        files = f"{self.files} file{'s' * (self.files != 1)}"
        line = f"{self.name}  {when}  {files}  {human(self.bytes)}"
        message = " ".join(self.message.split())
        return f"{line}  {message}" if message else line

    def to_json(self) -> dict[str, Any]:
        """The JSON form, without the ARK (the document around it names that)."""
        return {
            "version": self.version,
            "created": self.created,
            "message": self.message,
            "follows": self.follows,
            "files": self.files,
            "bytes": self.bytes,
        }

    @classmethod
    def from_json(cls, ark: str, obj: object) -> "VersionInfo":
        """Read the JSON form of a version of ark; VersionError if it is malformed."""
        if not isinstance(obj, dict):
            raise VersionError(f"a version of {ark} in JSON is an object, not {obj!r:.40}")
        version, created, follows = obj.get("version"), obj.get("created"), obj.get("follows")
        if not (
            _count(version)
            and version
            and isinstance(created, int | float)
            and not isinstance(created, bool)
            and math.isfinite(created)
            and isinstance(obj.get("message"), str)
            and (follows is None or (_count(follows) and follows))
            and _count(obj.get("files"))
            and _count(obj.get("bytes"))
        ):
            raise VersionError(
                f"a version of {ark} in JSON needs version >= 1, created (a Unix time), "
                "message, follows (a version or null), files and bytes >= 0"
            )
        return cls(ark, version, created, obj["message"], follows, obj["files"], obj["bytes"])


@dataclass(frozen=True)
class Archive:
    """One version of a bound archive: its manifest, its ERC record, and which version."""

    manifest: Manifest
    erc: Erc
    version: VersionInfo

    @cached_property
    def ark(self) -> Ark:
        """The ARK the archive is bound to (ark:NAAN/Name), parsed from its manifest."""
        return parse(self.manifest.ark)
