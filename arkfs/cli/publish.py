"""`arkfs publish DIR` and `arkfs bind ARK --manifest FILE`: put archives under ARKs."""

import argparse
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import trio

from arkfs.archive.manifest import Entry, Kind, build
from arkfs.ark.erc import Erc, Segment
from arkfs.ark.errors import ArkError
from arkfs.ark.identifier import Ark
from arkfs.ark.minter import mint, parse_shoulder
from arkfs.ark.normalization import parse
from arkfs.backend.base import Backend
from arkfs.backend.open import open_backend
from arkfs.cli.common import BadInput
from arkfs.publish.progress import Progress
from arkfs.publish.publisher import Summary, publish_tree
from arkfs.publish.scan import ScanError, scan
from arkfs.util.sizes import human
from arkfs.xet.errors import HashStringError
from arkfs.xet.hashing import string_to_hash

T = TypeVar("T")

ERC_EPILOG = (
    "Metadata (ERC, shown by `?info` and as extended attributes in the mount) comes from "
    "--erc FILE (an ANVL record: `erc:` then `who:`, `what:`, `when:`, `where:` lines) or "
    "from --who/--what/--when; unset fields default to (:unkn), the directory name and "
    "today. --persistence states the commitment made to the object (its erc-support)."
)


def _add_target(p: argparse.ArgumentParser) -> None:
    """--server/--store/--token, shared by publish and bind."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--server", help="base URL of an `arkfs serve` (default: embedded store)")
    where.add_argument(
        "--store",
        type=Path,
        help="embedded store directory (default: $ARKFS_STORE or ~/.local/share/arkfs/store)",
    )
    p.add_argument("--token", help="write token for --server (default: $ARKFS_TOKEN)")


def _add_erc(p: argparse.ArgumentParser) -> None:
    p.add_argument("--erc", type=Path, metavar="FILE", help="ERC record in ANVL")
    p.add_argument("--who", help="who made it (ERC who)")
    p.add_argument("--what", help="what it is (ERC what; default: the directory name)")
    p.add_argument("--when", help="when it was made (ERC when; default: today)")
    p.add_argument("--persistence", metavar="TEXT", help="the persistence statement (erc-support)")


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register `arkfs publish` and `arkfs bind`."""
    p = sub.add_parser(
        "publish",
        help="upload a directory and bind an ARK to it",
        description="Chunk and hash every file of DIR, upload only the chunks the CAS does not "
        "hold yet (deduplicated within the tree, against the ARK's previous version and "
        "through global dedup), then bind the ARK to the tree and its metadata. Publishing "
        "again under the same ARK replaces the binding and uploads only what changed.",
        epilog=ERC_EPILOG + " Example: arkfs publish ./data --ark ark:12345/x6np1wh8k "
        '--who "Lab of Sines" --what "Sine tables" --persistence "kept for 10 years"',
    )
    p.add_argument("dir", type=Path, metavar="DIR", help="directory to publish")
    name = p.add_mutually_exclusive_group(required=True)
    name.add_argument("--ark", help="the ARK to bind, ark:NAAN/Name")
    name.add_argument("--shoulder", help="mint a new ARK under NAAN/SHOULDER (e.g. 12345/x6)")
    _add_target(p)
    _add_erc(p)
    p.set_defaults(func=run_publish)

    b = sub.add_parser(
        "bind",
        help="bind an ARK to files already in the CAS",
        description="Bind an ARK to files already uploaded to the CAS by any XET client "
        "(hf_xet included). The manifest is a JSON list of {path, hash, size}; every hash "
        "must be in the CAS with exactly that size.",
        epilog=ERC_EPILOG
        + " Example: arkfs bind ark:12345/x6np1wh8k --manifest files.json --server "
        "http://127.0.0.1:8080   (files.json: "
        '[{"path": "data/a.bin", "hash": "<64 hex>", "size": 1024}])',
    )
    b.add_argument("ark", metavar="ARK", help="the ARK to bind, ark:NAAN/Name")
    b.add_argument("--manifest", type=Path, required=True, metavar="FILE", help="JSON file list")
    _add_target(b)
    _add_erc(b)
    b.set_defaults(func=run_bind)


def _archive_ark(text: str) -> Ark:
    """The ARK an archive is bound to: ark:NAAN/Name, no qualifiers."""
    try:
        ark = parse(text)
    except ArkError as exc:
        raise BadInput(str(exc)) from None
    if ark.components or ark.variants:
        raise BadInput(f"{text}: an archive is bound to ark:NAAN/Name, without qualifiers")
    return ark


def _erc(args: argparse.Namespace, ark: str, default_what: str) -> Erc:
    """The ERC record from --erc or from the flags, with defaults."""
    if args.erc is not None:
        if any((args.who, args.what, args.when, args.persistence)):
            raise BadInput("give either --erc FILE or --who/--what/--when/--persistence")
        try:
            erc = Erc.from_anvl(args.erc.read_text(encoding="utf-8"))
        except OSError as exc:
            raise BadInput(f"cannot read {args.erc}: {exc.strerror}") from None
        except ArkError as exc:
            raise BadInput(f"{args.erc}: {exc}") from None
        if erc.where is None:
            erc.where = ark
        return erc
    support = None
    if args.persistence:
        support = Segment(who=args.who, what=args.persistence, when=time.strftime("%Y-%m-%d"))
    return Erc(
        who=args.who or "(:unkn)",
        what=args.what or default_what,
        when=args.when or time.strftime("%Y-%m-%d"),
        where=ark,
        support=support,
    )


def _run(args: argparse.Namespace, job: Callable[[Backend], Awaitable[T]]) -> T:
    """Open the backend and run job on trio (cli.main reports its failures in one line)."""

    async def main() -> T:
        backend = await trio.to_thread.run_sync(
            lambda: open_backend(args.server, args.store, args.token, create=True)
        )
        try:
            return await job(backend)
        finally:
            await backend.aclose()

    return trio.run(main)


def run_publish(args: argparse.Namespace) -> int:
    """Publish DIR and print the ARK and how to mount it."""
    root: Path = args.dir
    try:
        found, skipped = scan(root)
    except ScanError as exc:
        raise BadInput(str(exc)) from None
    given = _archive_ark(args.ark) if args.ark else None
    if args.shoulder:
        try:
            parse_shoulder(args.shoulder)
        except ArkError as exc:
            raise BadInput(str(exc)) from None
    default_what = root.resolve().name or str(root)

    async def job(backend: Backend) -> Summary:
        ark = given
        if ark is None:
            shoulder = parse_shoulder(args.shoulder)
            taken = await backend.list_archives(f"ark:{shoulder.naan}/{shoulder.name}")
            ark = mint(shoulder, existing=set(taken))[0]
        erc = _erc(args, str(ark), default_what)
        summary, _ = await publish_tree(backend, str(ark), found, erc, Progress(), skipped)
        return summary

    s = _run(args, job)
    for line in s.skipped:
        print(f"arkfs: skipped {line}", file=sys.stderr)
    again = " (replacing the earlier version)" if s.replaced else ""
    print(f"published {s.ark}{again}: {s.files} files, {human(s.bytes)}")
    print(
        f"  new data {human(s.new_bytes)} in {s.xorbs} xorbs ({human(s.uploaded_bytes)} "
        f"uploaded), deduplicated {human(s.dedup_bytes)}"
    )
    if s.replaced and s.bytes:
        print(f"  only changed chunks uploaded: {s.new_bytes / s.bytes:.2%} of the data was new")
    where = f" --server {args.server}" if args.server else ""
    print(f"mount it:  arkfs mount{where} ~/arks && ls ~/arks/{s.ark}/")
    return 0


def _bind_entries(path: Path) -> list[Entry]:
    """Manifest entries from a JSON list of {path, hash, size}, with their directories."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise BadInput(f"{path} is not JSON: {exc}") from None
    if not isinstance(items, list) or not items:
        raise BadInput(f"{path}: expected a non-empty JSON list of {{path, hash, size}}")
    now = time.time_ns()
    entries: dict[str, Entry] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or set(item) != {"path", "hash", "size"}:
            raise BadInput(f"{path} item {i}: expected exactly the keys path, hash, size")
        rel, size = item["path"], item["size"]
        if not isinstance(rel, str) or not isinstance(size, int) or size < 0:
            raise BadInput(f"{path} item {i}: path must be a string and size an integer >= 0")
        try:
            h = string_to_hash(str(item["hash"]))
        except HashStringError:
            raise BadInput(f"{path} item {i}: hash must be 64 hex digits") from None
        parts = rel.strip("/").split("/")
        for depth in range(1, len(parts)):
            d = "/".join(parts[:depth])
            entries.setdefault(d, Entry(d, Kind.DIR, 0, 0o755, now))
        name = "/".join(parts)
        if name in entries:
            raise BadInput(f"{path} item {i}: {name} is listed twice")
        entries[name] = Entry(name, Kind.FILE, size, 0o644, now, h)
    return list(entries.values())


def run_bind(args: argparse.Namespace) -> int:
    """Bind an ARK to files already in the CAS."""
    ark = str(_archive_ark(args.ark))
    entries = _bind_entries(args.manifest)
    try:
        manifest = build(ark, entries, time.time())
    except ArkError as exc:
        raise BadInput(f"{args.manifest}: {exc}") from None
    erc = _erc(args, ark, os.path.splitext(args.manifest.name)[0])

    async def job(backend: Backend) -> None:
        for e in manifest.files:
            assert e.xet_hash is not None
            if not await backend.has_file(e.xet_hash, e.size):
                raise BadInput(
                    f"{e.path}: no file with that hash and {e.size} bytes is in the CAS; "
                    "upload it first"
                )
        await backend.bind(manifest, erc)

    _run(args, job)
    print(f"bound {ark}: {len(manifest.files)} files, {human(manifest.total_size)}")
    return 0
