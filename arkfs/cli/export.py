"""`arkfs export --bagit ARK[@vN] DIR` and `arkfs export --ocfl ARK DIR`: an archive as a
preservation package that tools outside arkfs validate, read chunk-verified from the
embedded store."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from arkfs.cli.common import BadInput
from arkfs.cli.target import add_target, archive_ark, no_whitespace, run_on_target

if TYPE_CHECKING:  # imported when the command runs: its --help starts at once
    from arkfs.backend.base import Backend


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `arkfs export`."""
    p = sub.add_parser(
        "export",
        help="write an archive as a BagIt bag or an OCFL object",
        description="Write the archive bound to ARK into the new directory DIR. --bagit: "
        "one version (the latest; ARK/@vN names version N) as a BagIt 1.0 bag (RFC 8493): "
        "the files under data/, manifest-sha256.txt from the stored digests, bag-info.txt "
        "from the ERC record. --ocfl: every version as an OCFL 1.1 object, unchanged files "
        "stored once, sha512 digests, each version's ERC in its message. Every byte is "
        "checked against its chunk hashes as it is read. From a server, fetch URL/ARK?bag "
        "instead (the same bag as a tar).",
        epilog="Examples:\n  arkfs export --bagit ark:12345/x6np1wh8k/@v1 ./bag\n"
        "  arkfs export --ocfl ark:12345/x6np1wh8k ./object",
    )
    form = p.add_mutually_exclusive_group(required=True)
    form.add_argument("--bagit", action="store_true", help="write a BagIt bag of one version")
    form.add_argument("--ocfl", action="store_true", help="write an OCFL object of all versions")
    p.add_argument("ark", metavar="ARK", help="the archive's ARK, ark:NAAN/Name[/@vN]")
    p.add_argument("dir", metavar="DIR", type=Path, help="the directory to create")
    add_target(p, "read")
    p.set_defaults(func=run_export)


def _version_ark(text: str) -> tuple[str, int | None]:
    """The archive's ARK and the version text names (None: the latest)."""
    from arkfs.ark.errors import ArkError
    from arkfs.ark.normalization import parse
    from arkfs.ark.version_qualifier import split_version

    no_whitespace(text, "an ARK")
    try:
        base, version = split_version(parse(text))
    except ArkError as exc:
        raise BadInput(str(exc)) from None
    return str(archive_ark(str(base))), version


def run_export(args: argparse.Namespace) -> int:
    """Write the bag or OCFL object of ARK into DIR."""
    import trio

    from arkfs.backend.embedded import EmbeddedBackend
    from arkfs.export.bagit import write_bag
    from arkfs.export.ocfl import write_object
    from arkfs.export.stored import stored_digest, stored_read

    ark, version = _version_ark(args.ark)
    if args.ocfl and version is not None:
        raise BadInput(f"{args.ark}: --ocfl exports every version; name the archive, {ark}")
    if args.server is not None:
        raise BadInput(f"export reads a store (--store); from a server, fetch {args.ark}?bag")
    if args.dir.exists():
        raise BadInput(f"{args.dir}: exists; export writes a new directory")

    async def job(backend: Backend) -> None:
        assert isinstance(backend, EmbeddedBackend)  # no --server: the embedded store
        read = stored_read(backend.service)
        if args.ocfl:
            listed = await backend.versions(ark)
            archives = [await backend.archive(ark, v.version) for v in listed]
            await trio.to_thread.run_sync(write_object, ark, archives, read, args.dir)
            return
        archive = await backend.archive(ark, version)
        bag = (archive, stored_digest(backend.service), read, args.dir)
        await trio.to_thread.run_sync(write_bag, *bag)

    run_on_target(args, job, create=False)
    what = "OCFL object" if args.ocfl else "BagIt bag"
    print(f"{args.dir}: {what} of {args.ark}")
    return 0
