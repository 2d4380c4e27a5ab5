"""`arkfs versions ARK`: every version of an archive, and what each changed."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TypeAlias

from arkfs.ark.filenames import filename_text
from arkfs.cli.target import add_target, archive_ark, run_on_target

if TYPE_CHECKING:  # imported when the command runs: its --help starts at once
    from arkfs.archive.changes import Changes
    from arkfs.archive.record import Archive, VersionInfo
    from arkfs.backend.base import Backend

SHOWN_PATHS = 10  # paths listed per kind of change in the text form; --json lists them all


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `arkfs versions`."""
    p = sub.add_parser(
        "versions",
        help="list the versions of an archive and what each changed",
        description="List every version of the archive bound to ARK, the latest first: when it "
        "was bound, its message, its files and size, and the files it added, removed and "
        "changed against the version before (compared by XET hash). ARK names the latest "
        "version; ARK/@vN names version N.",
        epilog="Examples:\n  arkfs versions ark:12345/x6np1wh8k --server http://127.0.0.1:8080\n"
        "  arkfs versions ark:12345/x6np1wh8k --json | jq '.versions[-1].changed'",
    )
    p.add_argument("ark", metavar="ARK", help="the archive's ARK, ark:NAAN/Name")
    p.add_argument(
        "--json", action="store_true", help="print JSON, oldest first, with every changed path"
    )
    add_target(p, "read")
    p.set_defaults(func=run_versions)


History: TypeAlias = "list[tuple[VersionInfo, Changes, list[str]]]"


async def _history(backend: Backend, ark: str) -> History:
    """Every version of ark with its file changes and the ERC elements it changed against
    the one it follows."""
    from arkfs.archive.changes import changes, metadata_change

    history = []
    before: Archive | None = None
    for v in await backend.versions(ark):
        archive = await backend.archive(ark, v.version)
        files = changes(before.manifest if before else None, archive.manifest)
        metadata = metadata_change(before.erc if before else None, archive.erc)
        history.append((v, files, metadata))  # each version follows the one before
        before = archive
    return history


def _text(ark: str, history: History) -> list[str]:
    """The listing for people; a path's bytes that are not UTF-8 read %XX (filename_text),
    here and in the JSON, never raw bytes or lone surrogates."""
    lines = [f"{ark}: {len(history)} version{'s' * (len(history) != 1)}, the latest first"]
    for v, c, metadata in reversed(history):
        lines.append(v.summary())
        counts = f"{len(c.added)} added, {len(c.removed)} removed, {len(c.changed)} changed"
        lines.append(f"    files: {counts}")
        if metadata:
            only = "" if c.added or c.removed or c.changed else " only"
            lines.append(f"    metadata change{only}: {', '.join(metadata)}")
        for kind, paths in (("+", c.added), ("-", c.removed), ("~", c.changed)):
            lines += [f"    {kind} {filename_text(p)}" for p in paths[:SHOWN_PATHS]]
            if len(paths) > SHOWN_PATHS:
                lines.append(f"    {kind} ... and {len(paths) - SHOWN_PATHS} more (--json)")
    return lines


def _json(ark: str, history: History) -> dict[str, Any]:
    listed = [
        v.to_json()
        | {k: list(map(filename_text, p)) for k, p in asdict(c).items()}
        | {"metadata": m}
        for v, c, m in history
    ]
    return {"ark": ark, "versions": listed}


def run_versions(args: argparse.Namespace) -> int:
    """Print the versions of ARK, the latest first (JSON: oldest first)."""
    ark = str(archive_ark(args.ark))
    history = run_on_target(args, lambda backend: _history(backend, ark), create=False)
    if args.json:
        print(json.dumps(_json(ark, history), indent=2))
    else:
        print("\n".join(_text(ark, history)))
    return 0
