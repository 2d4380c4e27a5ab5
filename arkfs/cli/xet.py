"""`arkfs xet ...`: XET tools that work on local files, with no server."""

from __future__ import annotations

import argparse
import io
import sys
from contextlib import nullcontext
from typing import TYPE_CHECKING, cast

from arkfs.cli.common import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:  # imported when the command runs: its --help starts at once
    from arkfs.xet.digest import Chunk


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `arkfs xet`."""
    p = sub.add_parser(
        "xet",
        help="hash files the way XET storage does (no server needed)",
        description="XET tools that work on local files, with no server: the file hashes "
        "and content-defined chunks that XET storage (hf_xet, the Hugging Face Hub, arkfs) "
        "gives the same bytes.",
    )
    xsub = p.add_subparsers(dest="xet_command", metavar="SUBCOMMAND", required=True)
    h = xsub.add_parser(
        "hash",
        help="print the XET file hash of each file",
        description="Print `<xet-hash>  <size>  <path>` for each file, like sha256sum. "
        "The hash is the one hf_xet and the Hugging Face Hub give the same bytes.",
        epilog="Examples:\n  arkfs xet hash data/*.bin\n  arkfs xet hash --chunks model.safetensors"
        "\n  curl -s https://example.org/a.bin | arkfs xet hash -",
    )
    h.add_argument("files", nargs="+", metavar="FILE", help="files to hash ('-' for stdin)")
    h.add_argument(
        "--chunks", action="store_true", help="also list each chunk: offset, length and hash"
    )
    h.set_defaults(func=run_hash)


def run_hash(args: argparse.Namespace) -> int:
    """Hash each file; report unreadable ones on stderr and exit 2 after the rest."""
    from arkfs.xet.digest import digest_stream
    from arkfs.xet.hashing import hash_to_string

    status = EXIT_OK
    for path in args.files:
        chunk_lines: list[str] = []

        def on_chunk(c: Chunk, lines: list[str] = chunk_lines) -> None:
            lines.append(f"  {c.offset}  {c.size}  {hash_to_string(c.hash)}")

        try:
            with nullcontext(_stdin()) if path == "-" else open(path, "rb") as f:
                digest = digest_stream(f, sha256=False, on_chunk=on_chunk if args.chunks else None)
        except OSError as exc:
            print(f"arkfs: {path}: {exc.strerror or exc}", file=sys.stderr)
            status = EXIT_USAGE
            continue
        print(f"{hash_to_string(digest.file_hash)}  {digest.size}  {path}")
        for line in chunk_lines:
            print(line)
    return status


def _stdin() -> io.BufferedReader:
    """Standard input as the binary file it is (typeshed calls it BinaryIO: no readinto)."""
    return cast(io.BufferedReader, sys.stdin.buffer)
