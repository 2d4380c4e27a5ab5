"""`arkfs publish DIR` and `arkfs bind ARK --manifest FILE`: put archives under ARKs, each
time as a new version."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arkfs.cli import from_bagit
from arkfs.cli.common import BadInput, Interrupted, first_error
from arkfs.cli.target import (
    add_target,
    archive_ark,
    latest,
    latest_record,
    no_whitespace,
    run_on_target,
)
from arkfs.publish import VERSION_NAMES_OPTION
from arkfs.util import paths
from arkfs.util.sizes import human

if TYPE_CHECKING:  # the publisher and its machinery load when a command runs: --help at once
    from arkfs.archive.manifest import Entry
    from arkfs.archive.record import VersionInfo
    from arkfs.ark.identifier import Ark
    from arkfs.backend.base import Backend
    from arkfs.publish.index import TreeIndex, Version
    from arkfs.publish.progress import Progress
    from arkfs.publish.publisher import Summary
    from arkfs.publish.scan import Changes, Found, Scanned

ERC_EPILOG = """\
Metadata (ERC, shown by `?info` and as extended attributes in the mount) comes from
--erc FILE (a whole ANVL record: `erc:` then `who:`, `what:`, `when:`, `where:` lines),
or is carried forward from the ARK's previous version, each of
--who/--what/--when/--where/--persistence replacing only its own field. A first
version's unset fields default to (:unkn), the directory name, today and the ARK.
--persistence states the commitment made to the object (its erc-support).
--license, --description, --keyword, --creator and --related are kept as ERC elements of
the same names (an --erc file may carry them too, and rights: and subject:); each given
replaces all of its kind, the others carry forward. They reach the landing page and its
schema.org JSON-LD. With --ark and no DIR, publish makes a metadata-only version: the
latest version's files with the new metadata, reading and uploading no file.
"""


def _add_erc(parser: argparse.ArgumentParser) -> None:
    """The metadata of the new version: ERC fields and a message."""
    p = parser.add_argument_group("metadata (ERC)")
    p.add_argument("--erc", type=Path, metavar="FILE", help="the whole ERC record, in ANVL")
    p.add_argument("--who", help="who made it (ERC who)")
    p.add_argument("--what", help="what it is (ERC what)")
    p.add_argument("--when", help="when it was made (ERC when)")
    p.add_argument("--where", help="where it is (ERC where; default: the ARK)")
    p.add_argument("--persistence", metavar="TEXT", help="the persistence statement (erc-support)")
    p.add_argument("--license", metavar="SPDX-ID", help="the licence, an SPDX identifier")
    p.add_argument(
        "--description", metavar="TEXT|@FILE", help="what it holds, in prose (@FILE: from FILE)"
    )
    p.add_argument("--keyword", action="append", metavar="WORD", help="a keyword (repeat for more)")
    p.add_argument(
        "--creator",
        action="append",
        metavar="NAME[; ORCID][; AFFILIATION]",
        help="a creator, with an ORCID iD (checked) and affiliation (repeat, in order)",
    )
    p.add_argument(
        "--related",
        action="append",
        metavar="RELATION=IDENTIFIER",
        help="a related identifier with its DataCite relation type, e.g. "
        "IsSupplementTo=doi:10.5061/dryad.x (repeatable)",
    )
    p.add_argument(
        "--embargo-until",
        metavar="DATE",
        help="serve the content only to read tokens until DATE (YYYY-MM-DD, UTC); the "
        "record and landing page stay public; later versions keep it until given another",
    )
    p.add_argument(
        "-m", "--message", default="", help="what this version changes (shown by arkfs versions)"
    )


PUBLISH_EXAMPLES = """
Examples:
  arkfs publish ./data --ark ark:12345/x6np1wh8k --who "Lab of Sines" --what "Sine tables"
  arkfs publish ./data --ark ark:12345/x6np1wh8k --persistence "kept for 10 years"
  ARKFS_TOKEN=... arkfs publish ./data --shoulder 12345/x6 --server http://host:8080 --json
"""
PROGRESS_EPILOG = """
Progress goes to stderr: bars for the whole publish and each phase (scan, hash, upload,
bind) with bytes, rate and ETA on a terminal, else a line as each phase begins and every
few seconds, then a summary. The whole reaches 100% only once the ARK is bound.
"""
BIND_EXAMPLES = """
Example, files.json listing files already in the CAS:
  [{"path": "data/a.bin", "hash": "<64 hex>", "size": 1024}]
  arkfs bind ark:12345/x6np1wh8k --manifest files.json --server http://127.0.0.1:8080
"""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `arkfs publish` and `arkfs bind`."""
    p = sub.add_parser(
        "publish",
        help="upload a directory and bind an ARK to it",
        description="Chunk and hash every file of DIR, upload only the chunks the CAS does not "
        "hold yet (deduplicated within the tree, against the ARK's previous version and "
        "through global dedup), then bind the ARK to the tree and its metadata. Publishing "
        "again under the same ARK makes its next version (v2, v3, ...) and uploads only what "
        "changed: the ARK names the latest version, ARK/@vN version N, for good.",
        epilog=ERC_EPILOG + PUBLISH_EXAMPLES + PROGRESS_EPILOG,
    )
    what = p.add_argument_group("what to publish")
    what.add_argument(
        "dir",
        type=Path,
        metavar="DIR",
        nargs="?",
        help="directory to publish; without it, --ark and metadata options make a "
        "metadata-only version of the latest version's files",
    )
    name = what.add_mutually_exclusive_group(required=True)
    name.add_argument("--ark", help="the ARK to bind, ark:NAAN/Name")
    name.add_argument("--shoulder", help="mint a new ARK under NAAN/SHOULDER (e.g. 12345/x6)")
    what.add_argument(
        "--allow-empty",
        action="store_true",
        help="bind a new version even if nothing changed since the latest (by default an "
        "unchanged tree and metadata bind nothing: 'nothing changed since vN', exit 0)",
    )
    what.add_argument(
        "--rehash",
        action="store_true",
        help="read and hash every file, ignoring the local index of what each file hashed "
        "to when its size, mtime, ctime and inode were as they are now",
    )
    what.add_argument(
        VERSION_NAMES_OPTION,
        action="store_true",
        help="publish root entries named like a version (@v1, @v2, ...) although ARKDIR/@vN "
        "shows that version, so such an entry is reachable only as ARKDIR/@vN/@vN (without "
        "this option they refuse the publish)",
    )
    from_bagit.add_option(what)
    add_target(p, "write")
    _add_erc(p)
    _add_output(p)
    p.set_defaults(func=run_publish)

    b = sub.add_parser(
        "bind",
        help="bind an ARK to files already in the CAS",
        description="Bind an ARK to files already uploaded to the CAS by any XET client "
        "(hf_xet included). The manifest is a JSON list of {path, hash, size}; every hash "
        "must be in the CAS with exactly that size. Binding a bound ARK makes its next "
        "version.",
        epilog=ERC_EPILOG + BIND_EXAMPLES,
    )
    what = b.add_argument_group("what to bind")
    what.add_argument("ark", metavar="ARK", help="the ARK to bind, ark:NAAN/Name")
    what.add_argument("--manifest", type=Path, required=True, metavar="FILE", help="JSON file list")
    add_target(b, "write")
    _add_erc(b)
    _add_output(b)
    b.set_defaults(func=run_bind)


def _add_output(p: argparse.ArgumentParser) -> None:
    """--json and --quiet."""
    out = p.add_argument_group("output")
    out.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of prose: ark, version, follows, files, bytes, "
        "new_bytes, dedup_bytes, uploaded_bytes (and for publish skipped, warnings, "
        "outside_links: symlinks that leave the tree or dangle, read_bytes, and changed: "
        "false when nothing changed since version, so nothing was bound)",
    )
    out.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print nothing but errors (and the --json object): no progress, no prose",
    )


def _print_json(ark: str, v: int, follows: int | None, files: int, size: int, **more: Any) -> None:
    """What a publish or bind did, as one JSON line for scripts (an ARK minted with
    --shoulder is read from it, not scraped from prose)."""
    record = {"ark": ark, "version": v, "follows": follows, "files": files, "bytes": size}
    print(json.dumps(record | more))


def _follows(follows: int | None) -> str:
    return f" (after v{follows})" if follows else ""


def run_publish(args: argparse.Namespace) -> int:
    """Publish DIR as the next version of its ARK, showing its progress; print the ARK and
    how to mount it."""
    from arkfs.ark.errors import ArkError
    from arkfs.ark.minter import parse_shoulder
    from arkfs.backend.open import open_backend  # noqa: F401  loaded before the progress shows
    from arkfs.cli import erc_options
    from arkfs.cli.publish_progress import shown
    from arkfs.publish.index import TreeIndex, index_path
    from arkfs.publish.progress import Progress
    from arkfs.util.allocator import limit_arenas

    limit_arenas()  # the hashing and upload threads' freed space shares two arenas
    if args.server:  # as open_backend: loaded before the progress shows
        import arkfs.backend.remote  # noqa: F401
    given = _ark_to_bind(args.ark) if args.ark else None
    given_erc = erc_options.fields(args) or erc_options.rich(args)  # checked before a scan
    changing = bool(given_erc or args.persistence or args.erc)
    if args.dir is None:
        if given is None or not changing:
            raise BadInput(
                "give DIR to publish, or --ark ARK with metadata options (--license, "
                "--creator, --erc FILE, ...) for a metadata-only version"
            )
        return _publish_metadata(args, str(given))
    from_bagit.prepare(args)
    if args.shoulder:
        no_whitespace(args.shoulder, "a shoulder")
        try:
            shoulder = parse_shoulder(args.shoulder)
        except ArkError as exc:
            raise BadInput(str(exc)) from None
        _assigned(shoulder, args.shoulder)
    progress = Progress()
    tree_index = TreeIndex(None if args.rehash else index_path(_target_key(args), args.dir))
    try:
        with shown(progress, args.quiet):
            scanned, changes = _scan(args, progress, tree_index)
            s = _publish(args, given, scanned, changes, progress, tree_index)
    except BaseException as exc:  # KeyboardInterrupt, perhaps inside exception groups
        if not isinstance(first_error(exc), KeyboardInterrupt):
            raise
        raise Interrupted(
            f"interrupted: {progress.files_stored} of {progress.files} files uploaded; "
            "run the same command again to resume"
        ) from None
    for line in [] if args.quiet else s.skipped:
        print(f"arkfs: skipped {line}", file=sys.stderr)
    if args.json:
        _print_json(
            s.ark, s.version, s.follows, s.files, s.bytes,
            new_bytes=s.new_bytes, dedup_bytes=s.dedup_bytes, uploaded_bytes=s.uploaded_bytes,
            skipped=s.skipped, warnings=scanned.warnings, outside_links=scanned.outside_links,
            changed=s.changed, read_bytes=s.read_bytes,
        )  # fmt: skip
        return 0
    if args.quiet:
        return 0
    if not s.changed:
        print(f"nothing changed since v{s.version}: {s.ark} still names v{s.version}")
        return 0
    version = f"v{s.version}{_follows(s.follows)}"
    print(f"published {s.ark} as {version}: {s.files} files, {human(s.bytes)}")
    print(
        f"  new data {human(s.new_bytes)} in {s.xorbs} xorbs ({human(s.uploaded_bytes)} "
        f"uploaded), deduplicated {human(s.dedup_bytes)}"
    )
    if s.follows and s.bytes:
        print(f"  only changed chunks uploaded: {s.new_bytes / s.bytes:.2%} of the data was new")
        print(f"  {s.ark} names v{s.version} now; {s.ark}/@v{s.follows} keeps naming v{s.follows}")
    where = f" --server {args.server}" if args.server else ""
    print(f"mount it:  arkfs mount{where} ~/arks && ls ~/arks/{s.ark}/")
    return 0


def _publish_metadata(args: argparse.Namespace, ark: str) -> int:
    """Bind the latest version's manifest with the new metadata as the next version: no
    file is read or uploaded, and no manifest fetched, parsed or sent (the archive side
    binds the one it holds), so it costs the same for any number of files."""
    from arkfs.archive.changes import metadata_change
    from arkfs.cli import erc_options

    async def job(backend: Backend) -> tuple[VersionInfo, bool]:
        latest, before = await backend.record(ark)  # NotBound: no metadata to change
        erc = erc_options.new_erc(args, ark, ark, before)
        if erc == before and not args.allow_empty:
            return latest, False
        labels = metadata_change(before, erc)
        message = f"metadata change ({', '.join(labels) or 'none'})"
        if args.message:
            message += f": {args.message}"
        return await backend.bind_again(ark, latest.version, erc, message), True

    v, changed = run_on_target(args, job, create=False)
    if args.json:
        _print_json(
            ark, v.version, v.follows, v.files, v.bytes,
            new_bytes=0, dedup_bytes=0, uploaded_bytes=0, read_bytes=0, changed=changed,
        )  # fmt: skip
    elif not args.quiet and not changed:
        print(f"nothing changed since v{v.version}: {ark} still names v{v.version}")
    elif not args.quiet:
        print(f"published {ark} as v{v.version}{_follows(v.follows)}: metadata only, no file read")
    return 0


def _ark_to_bind(text: str) -> Ark:
    """The ARK --ark names, if one may be bound: no qualifiers, an assigned NAAN's form."""
    ark = archive_ark(text)
    _assigned(ark, text)
    return ark


def _assigned(ark: Ark, text: str) -> None:
    """BadInput unless the NAAN of ark (typed as text) has the form of an assigned one."""
    from arkfs.ark.errors import ArkError
    from arkfs.ark.naan import check_assigned_naan

    try:
        check_assigned_naan(ark.naan)
    except ArkError as exc:
        raise BadInput(f"{text}: {exc}") from None


def _scan(
    args: argparse.Namespace, progress: Progress, tree_index: TreeIndex
) -> tuple[Scanned, tuple[Version, Changes] | None]:
    """Scan DIR, before any hashing; its warnings are printed (one line each) unless -q.
    Its entries are made now unless tree_index remembers the scan as it is (then they
    may not be needed), so a tree refused at scan is refused before a store is opened;
    when it remembers an earlier scan, only the entries that changed since are made, and
    come back with the version that scan was published as."""
    from arkfs.publish.scan import ScanError, scan

    try:
        scanned = scan(args.dir, progress, args.allow_version_names)
        changes, known = None, scanned.digest and tree_index.published(scanned.digest)
        if not known:
            changes = _changes(scanned, tree_index)
            if scanned.packed is not None:
                tree_index.stage(scanned.packed)
        scanned.packed = None  # kept in the index, or not needed
        if not known and changes is None:
            scanned.found  # noqa: B018 (made now: ScanError before a store is opened)
    except ScanError as exc:
        raise BadInput(str(exc)) from None
    for line in [] if args.quiet else scanned.warnings:
        print(f"arkfs: warning: {line}", file=sys.stderr)
    return scanned, changes


def _changes(scanned: Scanned, tree_index: TreeIndex) -> tuple[Version, Changes] | None:
    """What changed in scanned since the scan tree_index remembers, and the version that
    scan was published as; None if it remembers none it can compare."""
    remembered = tree_index.remembered()
    if remembered is None:
        return None
    version, rows = remembered
    changes = scanned.changes(rows)
    return None if changes is None else (version, changes)


def _found(scanned: Scanned) -> list[Found]:
    """The entries of the scanned DIR (made the first time); an attribute the manifest
    cannot carry is one line, exit 2."""
    from arkfs.publish.scan import ScanError

    try:
        return scanned.found
    except ScanError as exc:
        raise BadInput(str(exc)) from None


def _check(root: Entry, entries: Iterable[Entry]) -> None:
    """Refuse, before any hashing, a tree the manifest would refuse: one line, exit 2."""
    from arkfs.publish.scan import ScanError, check_publishable

    try:
        check_publishable(root, entries)
    except ScanError as exc:
        raise BadInput(str(exc)) from None


def _publish(
    args: argparse.Namespace,
    given: Ark | None,
    scanned: Scanned,
    changes: tuple[Version, Changes] | None,
    progress: Progress,
    tree_index: TreeIndex,
) -> Summary:
    """Publish the scanned DIR to the target, counting in progress: only what changes says
    changed, if it is told against the version to follow."""
    from arkfs.ark.minter import mint, parse_shoulder
    from arkfs.cli import erc_options
    from arkfs.publish.index import Version
    from arkfs.publish.journal import UploadJournal
    from arkfs.publish.publisher import publish_tree, unchanged_scan

    root: Path = args.dir
    default_what = root.resolve().name or str(root)
    journal = UploadJournal(_journal_path(args))

    async def job(backend: Backend) -> Summary:
        backend = from_bagit.checked(backend, args)
        record = None  # the latest version and its ERC: an unchanged tree needs no more
        if given is None:
            shoulder = parse_shoulder(args.shoulder)
            taken = await backend.list_archives(f"ark:{shoulder.naan}/{shoulder.name}")
            ark = str(mint(shoulder, existing=set(taken))[0])
        else:
            ark = str(given)
            record = await latest_record(backend, ark)
        erc = erc_options.new_erc(args, ark, default_what, record[1] if record else None)
        summary = unchanged_scan(
            ark,
            scanned,
            erc,
            latest=record,
            tree_index=tree_index,
            journal=journal,
            progress=progress,
            allow_empty=args.allow_empty,
        )
        if summary is not None:
            return summary
        # Exactly the version record names, whatever was bound since.
        previous = None if record is None else await backend.archive(ark, record[0].version)
        since = None
        if changes is not None and record is not None and changes[0] == Version.of(record[0]):
            assert previous is not None
            since = None if previous.manifest.entries.has_links else changes[1]
        summary, _ = await publish_tree(
            backend,
            ark,
            _found(scanned) if since is None else since.found,
            erc,
            previous=previous,
            message=args.message,
            progress=progress,
            skipped=scanned.skipped,
            journal=journal,
            root=scanned.root,
            tree_index=tree_index,
            allow_empty=args.allow_empty,
            check=None if since is not None else partial(_check, scanned.root),
            scan=scanned.digest,
            dropped=None if since is None else since.dropped,
        )
        return summary

    return run_on_target(args, job, create=True)


def _target_key(args: argparse.Namespace) -> str:
    """The store or server a publish goes to, as the key of what is kept about it."""
    embedded = "embedded:" + os.environ.get("ARKFS_STORE", "")
    return args.server or (os.path.abspath(args.store) if args.store else embedded)


def _journal_path(args: argparse.Namespace) -> Path:
    """Where the upload journal of this publish (its target, tree and name) is kept."""
    import hashlib

    key = "\n".join((_target_key(args), os.path.abspath(args.dir), args.ark or args.shoulder))
    return paths.cache_dir() / "publish" / hashlib.sha256(key.encode()).hexdigest()[:32]


def _bind_entries(path: Path) -> list[Entry]:
    """Manifest entries from a JSON list of {path, hash, size}, with their directories."""
    from arkfs.archive.manifest import Entry, Kind
    from arkfs.xet.errors import HashStringError
    from arkfs.xet.hashing import string_to_hash

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
    """Bind the next version of an ARK to files already in the CAS."""
    from arkfs.archive.manifest import build
    from arkfs.ark.errors import ArkError
    from arkfs.cli import erc_options

    ark = str(_ark_to_bind(args.ark))
    entries = _bind_entries(args.manifest)
    try:
        manifest = build(ark, entries, time.time())
    except ArkError as exc:
        raise BadInput(f"{args.manifest}: {exc}") from None
    default_what = os.path.splitext(args.manifest.name)[0]

    async def job(backend: Backend) -> VersionInfo:
        for e in manifest.files:
            assert e.xet_hash is not None
            if not await backend.has_file(e.xet_hash, e.size):
                raise BadInput(
                    f"{e.path}: no file with that hash and {e.size} bytes is in the CAS; "
                    "upload it first"
                )
        previous = await latest(backend, ark)
        erc = erc_options.new_erc(args, ark, default_what, previous.erc if previous else None)
        return await backend.bind(manifest, erc, args.message)

    v = run_on_target(args, job, create=True)
    if args.json:  # bind uploads nothing: its files were in the CAS already
        _print_json(
            ark, v.version, v.follows, v.files, v.bytes,
            new_bytes=0, dedup_bytes=0, uploaded_bytes=0,
        )  # fmt: skip
        return 0
    if args.quiet:
        return 0
    files = f"{v.files} file{'s' * (v.files != 1)}"
    print(f"bound {ark} as v{v.version}{_follows(v.follows)}: {files}, {human(v.bytes)}")
    return 0
