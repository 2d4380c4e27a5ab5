"""`arkfs get ARK[/PATH] [DEST]`: download a file, a directory or a whole archive, every
byte verified (arkfs/download.py does the work)."""

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from arkfs.cli.common import BadInput
from arkfs.cli.resolver_options import add_resolver_options
from arkfs.cli.token_options import add_token_options, token_from
from arkfs.util.sizes import human

if TYPE_CHECKING:  # the read path loads when get runs: --help starts at once
    from arkfs.api import Client
    from arkfs.download import GetProgress, Preview

# Pieces at once: 8 keep the server's disk and the client busy (a cold 1 GiB get: 2.75 s
# median against 2.95 s with 4, peak RSS 370 MB against 275 MB), 128 MiB in flight.
JOBS = 8
STDOUT_BLOCK = 4 * 1024 * 1024  # bytes read and written at a time for DEST -


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register `arkfs get`."""
    p = sub.add_parser(
        "get",
        help="download a file, directory or archive (@vN too), every byte verified",
        description="Download what ARK names (ark:NAAN/Name[/@vN][/PATH]) to DEST, every byte "
        "checked against its chunk hashes (a file resumed from an earlier run's pieces against "
        "its SHA-256 too), in parallel, through the same "
        "servers, registries, mirrors, tokens and chunk cache as `arkfs mount`. A rerun fetches "
        "only what is missing or wrong; a file appears under its name only once it is whole "
        "and checked. Modes, mtimes, symlinks, hard links and user.* extended attributes are "
        "kept as the mount shows them. A get that would not fit on DEST's file system stops "
        "before it fetches.",
        epilog="Examples:\n  arkfs get ark:12345/x6np1wh8k/@v2/data --server https://arks.example.org\n"
        "  arkfs get ark:12345/x6np1wh8k --include '*.csv' --exclude 'old/'\n"
        "  arkfs get ark:12345/x7tables/table.csv - | head",
    )
    p.add_argument("ark", metavar="ARK", help="ark:NAAN/Name[/@vN][/PATH]")
    p.add_argument(
        "dest",
        metavar="DEST",
        nargs="?",
        help="default: the last name; a file goes inside DEST if DEST is a directory or ends "
        "in / (missing directories are made); - writes a file to stdout (as `aws s3 cp`), "
        "each byte checked before it is written",
    )
    p.add_argument("--server", action="append", default=[], metavar="URL", help="an arkfs server")
    p.add_argument("--store", type=Path, metavar="DIR", help="an embedded store")
    add_token_options(p, "read token for the --server URLs")
    p.add_argument("--cache-dir", type=Path, metavar="DIR", help="the chunk cache (the mount's)")
    p.add_argument("--no-cache", action="store_true", help="neither use nor fill the chunk cache")
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="PATTERN",
        help="only the paths that match PATTERN (repeatable; fnmatch, against the path below "
        "ARK: '*.csv', 'data/'), as `hf download --include`",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="not the paths that match PATTERN (repeatable; as --include)",
    )
    p.add_argument("-j", "--jobs", type=int, default=JOBS, help=f"pieces at once (default {JOBS})")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list what a get would fetch or link, and count what is in place already "
        "(checked by size and SHA-256), writing nothing: a check of a local copy",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress, only errors")
    p.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    add_resolver_options(p)
    p.set_defaults(func=run_get)


def run_get(args: argparse.Namespace) -> int:
    """Download; one line and exit 1 on a failure (not found, a wrong byte), 2 on bad input."""
    from arkfs.api import DEFAULT_CACHE_SIZE, BadArk, Client
    from arkfs.cli.progress_display import shown
    from arkfs.download import GetProgress, Selection, get, preview
    from arkfs.util.allocator import keep_freed, tune_gc

    to_stdout = args.dest == "-"
    if to_stdout and (args.json or args.include or args.exclude or args.dry_run):
        raise BadInput(
            "DEST - (stdout) takes one file: no --json, --include, --exclude or --dry-run"
        )
    keep_freed()  # this process's life is the download: its buffers are reused, not refaulted
    tune_gc()
    token = token_from(args)
    # The read path logs each retry it makes (a chunk fetched again after a bad hash);
    # the command's own line says what it came to, so those stay off stderr.
    logging.getLogger().addHandler(logging.NullHandler())
    cache_dir = args.cache_dir
    scratch = None
    if args.no_cache:  # a cache of size 0, in a directory of its own: nothing is written
        import tempfile

        scratch = tempfile.TemporaryDirectory(prefix="arkfs-get-")
        cache_dir = scratch.name
    try:
        client = Client(
            tuple(args.server), store=args.store, token=token, cache_dir=cache_dir,
            cache_size=0 if args.no_cache else DEFAULT_CACHE_SIZE,
            registry=tuple(args.registry), allow_private=args.allow_private,
            config=args.config,
            fallback=args.fallback,
        )  # fmt: skip
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    progress = GetProgress()
    began = time.monotonic()
    try:
        if to_stdout:
            return _to_stdout(client, args.ark)
        selection = Selection(tuple(args.include), tuple(args.exclude))
        dest = Path(args.dest) if args.dest else None
        into = bool(args.dest) and args.dest.endswith("/")
        if args.dry_run:
            _show_preview(args, preview(client, args.ark, dest, selection, into))
            return 0
        with shown(GetFeed(progress), args.quiet):
            out = get(client, args.ark, dest, progress, args.jobs, selection, into)
    except BadArk as exc:
        raise BadInput(exc.strerror or str(exc)) from None
    finally:
        client.close()
        if scratch is not None:
            scratch.cleanup()
    took = time.monotonic() - began
    if progress.xattrs_lost and not args.quiet:
        print(
            f"arkfs: warning: {out}: the file system there would not keep the user.* extended "
            f"attributes of {progress.xattrs_lost} of the entries (the bytes are all right)",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps({
            "ark": args.ark, "dest": str(out), "files": progress.files, "bytes": progress.total,
            "fetched": progress.fetched, "kept": progress.kept, "seconds": round(took, 3),
            "xattrs_lost": progress.xattrs_lost,
        }))  # fmt: skip
    return 0


def _show_preview(args: argparse.Namespace, plan: "Preview") -> None:
    """A dry run's lines: one per path to fetch or link (not with -q), then a summary; or,
    with --json, the same as one JSON object."""
    to_fetch = sum(n for _, _, n in plan.todo)
    if args.json:
        print(json.dumps({
            "ark": args.ark, "dest": str(plan.out), "dry_run": True, "in_place": plan.in_place,
            "bytes_to_fetch": to_fetch,
            "todo": [{"do": do, "path": str(path), "bytes": n} for do, path, n in plan.todo],
        }))  # fmt: skip
        return
    if not args.quiet:
        for do, path, n in plan.todo:
            print(f"{do:<7} {human(n) if n else '':>9}  {_one_line(path)}")
    print(
        f"dry run: {_one_line(plan.out)}: {len(plan.todo)} to fetch or link "
        f"({human(to_fetch)} to fetch), {plan.in_place} in place"
    )


def _one_line(path: Path) -> str:
    """path as one line of text, as `ls -b` shows names: backslashes, bytes that are no
    UTF-8 (\\xe9) and control characters (\\n) escaped."""
    return "".join(map(_shown_char, str(path)))


def _shown_char(c: str) -> str:
    if "\udc80" <= c <= "\udcff":  # a byte that is no UTF-8, as os.fsdecode keeps it
        return f"\\x{ord(c) - 0xDC00:02x}"
    if c == "\\":
        return "\\\\"
    return c if c.isprintable() else repr(c)[1:-1]


def _to_stdout(client: "Client", ark: str) -> int:
    """Write the file ark names to stdout, in order, each block checked before it goes; a
    reader that stops early (`| head`) ends it quietly, exit 1."""
    out, block = sys.stdout.fileno(), bytearray(STDOUT_BLOCK)
    view = memoryview(block)
    try:
        with client.open(ark) as f:
            while n := f.readinto(block):
                at = 0
                while at < n:  # a pipe takes part of a write at a time
                    at += os.write(out, view[at:n])
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), out)  # nothing left to flush at exit
        return 1
    except IsADirectoryError:
        raise BadInput(f"{ark} is a directory: DEST - (stdout) takes one file") from None
    return 0


class GetFeed:
    """A get's counters, as the progress display reads them."""

    whole = "get"

    def __init__(self, progress: "GetProgress") -> None:
        self.progress = progress

    def rows(self) -> dict[str, tuple[int, int | None]]:
        p = self.progress
        later = len(p.phases) > 1
        every = {
            "list": (p.total, p.total if later else None),
            "fetch": (p.done, p.total),
            "check": (p.checked, p.total),
        }
        return {self.whole: p.overall()} | {name: every[name] for name in p.phases}

    def began(self, phase: str) -> tuple[int, int]:
        return self.progress.began[phase]

    def finished(self) -> bool:
        return self.progress.dest is not None

    def label(self, row: str) -> str:
        return row

    def summary(self, seconds: float) -> str:
        from arkfs.cli.progress_display import duration

        p = self.progress
        kept = f", {_files(p.kept)} kept" if p.kept else ""
        return (
            f"get 100%: got {p.dest}: {_files(p.files)}, {human(p.total)} "
            f"({human(p.fetched)} fetched{kept}) in {duration(seconds)}"
        )


def _files(n: int) -> str:
    """The count n of files, in words."""
    return f"{n} file" if n == 1 else f"{n} files"
