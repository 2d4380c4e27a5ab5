"""Withdrawal of an archive: a tombstone version, as a legal takedown needs.

`arkfs withdraw ARK --reason TEXT` binds the next version of the archive like any bind (so
the same write scope and shoulders rule it): a manifest with no entries, the latest ERC
record with two elements added to its `erc-support:` segment (the commitment story, next
to the persistence statement), and the message `withdrawn: REASON`:

    withdrawn: 2026-11-25T20:40:00Z
    withdrawn-reason: court order 12/345

A withdrawal covers every version bound before it: their content answers 410 Gone, their
`?info` 200 with the record and the reason. Publishing again binds a version after the
tombstone, which it does not cover: the archive is reinstated as that new version.
"""

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.erc import Erc, Segment

WITHDRAWN = "withdrawn"
REASON = "withdrawn-reason"
MESSAGE = "withdrawn: "  # the tombstone's version message starts so


@dataclass(frozen=True)
class Withdrawal:
    """The tombstone that covers a version: when (ISO 8601, UTC), why, and its version."""

    when: str
    reason: str
    version: int

    def line(self) -> str:
        """One line for an attribute or a log: `WHEN REASON`."""
        return f"{self.when} {self.reason}"


def tombstone(manifest: Manifest, erc: Erc, reason: str, now: float) -> tuple[Manifest, Erc, str]:
    """The manifest, ERC record and message that withdraw the archive whose latest version
    has manifest and erc, for reason, at now (Unix time)."""
    reason = " ".join(reason.split())
    if not reason:
        raise ValueError("a withdrawal needs a reason: --reason TEXT")
    when = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    support = erc.support or Segment()
    kept = [(label, v) for label, v in support.other if label not in (WITHDRAWN, REASON)]
    support = replace(support, other=[*kept, (WITHDRAWN, when), (REASON, reason)])
    empty = Manifest(manifest.ark, [], created=now, root=manifest.root)
    return empty, replace(erc, support=support), MESSAGE + reason


def withdrawal_in(erc: Erc, version: int) -> Withdrawal | None:
    """The withdrawal a version's ERC record states, if it is a tombstone."""
    if erc.support is None:
        return None
    found = dict(erc.support.other)
    if WITHDRAWN not in found:
        return None
    return Withdrawal(found[WITHDRAWN], found.get(REASON, ""), version)


def may_be_tombstone(v: VersionInfo) -> bool:
    """Could version v be a tombstone? (Its ERC record says for sure.)"""
    return v.files == 0 and v.message.startswith(MESSAGE)


def covering(versions: list[VersionInfo], version: int) -> list[VersionInfo]:
    """The versions that may withdraw version (itself or later, tombstones by their
    message), nearest first: the caller reads their ERC records to be sure."""
    return [v for v in versions if v.version >= version and may_be_tombstone(v)]


def without_withdrawal(erc: Erc) -> Erc:
    """erc without withdrawal elements: what a version bound after a tombstone keeps of the
    record it was given (publish starts from the latest version's, the tombstone's)."""
    if erc.support is None:
        return erc
    kept = [(label, v) for label, v in erc.support.other if label not in (WITHDRAWN, REASON)]
    return replace(erc, support=replace(erc.support, other=kept))


def with_withdrawal(erc: Erc, withdrawal: Withdrawal) -> Erc:
    """erc with the withdrawal's elements in its support segment (for `?info`)."""
    support = erc.support or Segment()
    kept = [(label, v) for label, v in support.other if label not in (WITHDRAWN, REASON)]
    extra = [(WITHDRAWN, withdrawal.when), (REASON, withdrawal.reason)]
    return replace(erc, support=replace(support, other=[*kept, *extra]))


def as_withdrawn(archive: Archive, withdrawal: Withdrawal) -> Archive:
    """A version a withdrawal covers as every reader sees it: no entries (its content is
    gone) and its ERC record with the withdrawal, as the tombstone itself shows."""
    manifest = archive.manifest
    empty = Manifest(manifest.ark, [], created=manifest.created, root=manifest.root)
    return Archive(empty, with_withdrawal(archive.erc, withdrawal), archive.version)
