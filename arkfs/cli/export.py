"""`arkfs export --bagit ARK[@vN] DIR`: an archive version as a preservation package that
tools outside arkfs validate, read chunk-verified from the embedded store."""

import argparse
from pathlib import Path

import trio

from arkfs.ark.errors import ArkError
from arkfs.ark.normalization import parse
from arkfs.ark.versions import split_version
from arkfs.backend.base import Backend
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.cli.common import BadInput
from arkfs.cli.target import add_target, archive_ark, no_whitespace, run_on_target
from arkfs.export.bagit import write_bag
from arkfs.export.stored import stored_digest, stored_read


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register `arkfs export`."""
    p = sub.add_parser(
        "export",
        help="write an archive version as a BagIt bag",
        description="Write the archive bound to ARK (its latest version; ARK/@vN names "
        "version N) into the new directory DIR as a BagIt 1.0 bag (RFC 8493): the files "
        "under data/, manifest-sha256.txt from the stored digests, bag-info.txt from the "
        "ERC record. Every byte is checked against its chunk hashes as it is read. "
        "From a server, fetch URL/ARK?bag instead (the same bag as a tar).",
        epilog="Example:\n  arkfs export --bagit ark:12345/x6np1wh8k/@v1 ./bag",
    )
    p.add_argument("--bagit", action="store_true", required=True, help="write a BagIt bag")
    p.add_argument("ark", metavar="ARK", help="the archive's ARK, ark:NAAN/Name[/@vN]")
    p.add_argument("dir", metavar="DIR", type=Path, help="the directory to create")
    add_target(p, "read")
    p.set_defaults(func=run_export)


def _version_ark(text: str) -> tuple[str, int | None]:
    """The archive's ARK and the version text names (None: the latest)."""
    no_whitespace(text, "an ARK")
    try:
        base, version = split_version(parse(text))
    except ArkError as exc:
        raise BadInput(str(exc)) from None
    return str(archive_ark(str(base))), version


def run_export(args: argparse.Namespace) -> int:
    """Write the bag of ARK into DIR."""
    ark, version = _version_ark(args.ark)
    if args.server is not None:
        raise BadInput(f"export reads a store (--store); from a server, fetch {args.ark}?bag")
    if args.dir.exists():
        raise BadInput(f"{args.dir}: exists; export writes a new directory")

    async def job(backend: Backend) -> None:
        assert isinstance(backend, EmbeddedBackend)  # no --server: the embedded store
        archive = await backend.archive(ark, version)
        service = backend.service
        bag = (archive, stored_digest(service), stored_read(service), args.dir)
        await trio.to_thread.run_sync(write_bag, *bag)

    run_on_target(args, job, create=False)
    print(
        f"{args.dir}: BagIt bag of {ark}/@v{version}"
        if version
        else f"{args.dir}: BagIt bag of {ark}"
    )
    return 0
