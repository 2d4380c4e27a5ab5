"""`arkfs withdraw ARK --reason TEXT`: withdraw an archive, as a legal takedown needs.

The withdrawal is the archive's next version, a tombstone (arkfs.archive.withdrawal):
bound like any version, so it needs a write token for the ARK's shoulder. Publishing again
reinstates the archive as the version after it.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from arkfs.cli.common import BadInput
from arkfs.cli.target import add_target, archive_ark, run_on_target

if TYPE_CHECKING:  # imported when the command runs: its --help starts at once
    from arkfs.archive.record import VersionInfo
    from arkfs.backend.base import Backend


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `arkfs withdraw`."""
    p = sub.add_parser(
        "withdraw",
        help="withdraw an archive: its content answers 410 Gone, its record stays",
        description="Withdraw the archive bound to ARK: bind, as its next version, a "
        "tombstone with no files whose ERC record states when and why. Every version's "
        "content then answers 410 Gone with a page giving the ERC record, the persistence "
        "statement and the reason; ?info keeps answering with the record and the reason; "
        "mounts show the archive empty, with a user.ark.withdrawn attribute. Publishing "
        "again reinstates the archive as a new version. Needs write scope on its shoulder.",
        epilog="Example:\n  arkfs withdraw ark:12345/x6np1wh8k --reason 'court order 12/345' "
        "--server https://ark.example.org --token-file robot.token",
    )
    p.add_argument("ark", metavar="ARK", help="the archive's ARK, ark:NAAN/Name")
    p.add_argument("--reason", required=True, metavar="TEXT", help="why, shown to every reader")
    add_target(p, "write")
    p.set_defaults(func=run_withdraw)


async def _withdraw(backend: Backend, ark: str, reason: str) -> VersionInfo | None:
    """Bind the tombstone of ark; None if its latest version already is one."""
    from arkfs.archive.withdrawal import tombstone, withdrawal_in

    latest = await backend.archive(ark)
    if withdrawal_in(latest.erc, latest.version.version) is not None:
        return None
    manifest, erc, message = tombstone(latest.manifest, latest.erc, reason, time.time())
    return await backend.bind(manifest, erc, message)


def run_withdraw(args: argparse.Namespace) -> int:
    """Withdraw ARK; print the tombstone's version."""
    ark = str(archive_ark(args.ark))
    if not " ".join(args.reason.split()):
        raise BadInput("--reason must say why the archive is withdrawn")
    done = run_on_target(args, lambda backend: _withdraw(backend, ark, args.reason), create=False)
    if done is None:
        print(f"{ark} is already withdrawn")
    else:
        print(f"{ark} withdrawn as {done.name}: its content now answers 410 Gone")
    return 0
