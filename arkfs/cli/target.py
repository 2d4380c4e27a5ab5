"""Where publish, bind and versions work: --server or --store, and running a job there."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from arkfs.cli.common import BadInput
from arkfs.cli.token_options import add_token_options, token_from

if TYPE_CHECKING:  # the rest is imported when a command runs: its --help starts at once
    from arkfs.archive.record import Archive, VersionInfo
    from arkfs.ark.erc import Erc
    from arkfs.ark.identifier import Ark
    from arkfs.backend.base import Backend

T = TypeVar("T")


def add_target(parser: argparse.ArgumentParser, token: str) -> None:
    """--server, --store, and --token or --token-file; token says what the token is for."""
    p = parser.add_argument_group("where (default: the embedded store)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--server", metavar="URL", help="base URL of an `arkfs serve`")
    where.add_argument(
        "--store",
        type=Path,
        metavar="DIR",
        help="embedded store directory (default: $ARKFS_STORE or ~/.local/share/arkfs/store)",
    )
    add_token_options(p, f"{token} token for --server")


def archive_ark(text: str) -> Ark:
    """The ARK an archive is bound to: ark:NAAN/Name, no qualifiers."""
    from arkfs.ark.errors import ArkError
    from arkfs.ark.normalization import parse

    no_whitespace(text, "an ARK")
    try:
        ark = parse(text)
    except ArkError as exc:
        raise BadInput(str(exc)) from None
    if ark.components or ark.variants:
        raise BadInput(f"{text}: an archive is bound to ark:NAAN/Name, without qualifiers")
    return ark


def no_whitespace(text: str, what: str) -> None:
    """BadInput if text, typed as what, holds whitespace: parsing an ARK drops it, and
    'bad name' must not become badname."""
    if any(c.isspace() for c in text):
        raise BadInput(f"{text!r}: {what} holds no spaces or other whitespace")


async def latest(backend: Backend, ark: str) -> Archive | None:
    """The latest version of ark, or None while it is unbound."""
    from arkfs.backend.base import NotBound

    try:
        return await backend.archive(ark)
    except NotBound:
        return None


async def latest_record(backend: Backend, ark: str) -> tuple[VersionInfo, Erc] | None:
    """The latest version of ark and its ERC record (no manifest), or None while unbound."""
    from arkfs.backend.base import NotBound

    try:
        return await backend.record(ark)
    except NotBound:
        return None


def run_on_target(
    args: argparse.Namespace, job: Callable[[Backend], Awaitable[T]], *, create: bool
) -> T:
    """Open the backend and run job on trio (cli.main reports its failures in one line)."""
    import trio

    from arkfs.backend.open import BadTarget, open_backend

    token = token_from(args)

    async def main() -> T:
        try:
            backend = await trio.to_thread.run_sync(
                lambda: open_backend(args.server, args.store, token, create=create)
            )
        except BadTarget as exc:
            raise BadInput(str(exc)) from None
        try:
            return await job(backend)
        finally:
            await backend.aclose()

    return trio.run(main)
