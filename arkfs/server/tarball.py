"""'Download all': a tar of an archive version or of one of its directories, streamed from
verified chunks, with no temporary file.

Each member's header is the stdlib's (tarfile.TarInfo in pax format: long or non-ASCII
names get a pax header), so the whole length is known before the first byte goes out. File
bytes come from read_file, every chunk checked against its hash, so damage can only cut
the reply short, never change a byte.
"""

import tarfile
from collections.abc import Generator
from dataclasses import dataclass

from arkfs.archive.manifest import Entry, Kind, Manifest
from arkfs.service.archive import ArchiveService
from arkfs.store.errors import StoreCorrupt
from arkfs.store.files import read_file

INFLECTION = "tar"  # the query (`ark:NAAN/Name?tar`) that asks for the tar
MEDIA_TYPE = "application/x-tar"
BLOCK = tarfile.BLOCKSIZE
RECORD = tarfile.RECORDSIZE  # the end of a tar is padded to a whole record, as tar(1) writes
FLUSH_BYTES = 1024 * 1024  # headers and small files are gathered up to this before a send
DIR_MODE = 0o755  # the top directory of an archive root's tar, which has no entry of its own
_TYPES = {Kind.DIR: tarfile.DIRTYPE, Kind.FILE: tarfile.REGTYPE, Kind.SYMLINK: tarfile.SYMTYPE}


@dataclass(frozen=True)
class Member:
    """One tar member: its header blocks, and the file entry whose bytes follow (if any)."""

    header: bytes
    file: Entry | None


def _padding(size: int) -> int:
    return -size % BLOCK


def _header(name: str, kind: Kind, mode: int, mtime: float, size: int, target: str) -> bytes:
    info = tarfile.TarInfo(name)
    info.type = _TYPES[kind]
    info.mode, info.mtime, info.size, info.linkname = mode, int(mtime), size, target
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def members(manifest: Manifest, path: str, top: str, mtime: float) -> list[Member]:
    """The members of directory path ('' the archive root) of manifest, all under the
    directory top; mtime is top's when path is the root."""
    d = manifest.entry(path) if path else None
    mode, mtime = (d.mode, d.mtime_ns / 1e9) if d else (DIR_MODE, mtime)
    out = [Member(_header(top, Kind.DIR, mode, mtime, 0, ""), None)]
    prefix = path + "/" if path else ""
    for e in manifest.entries:
        if not e.path.startswith(prefix):
            continue
        size = e.size if e.kind is Kind.FILE else 0
        name = f"{top}/{e.path[len(prefix) :]}"
        header = _header(name, e.kind, e.mode, e.mtime_ns / 1e9, size, e.target or "")
        out.append(Member(header, e if e.kind is Kind.FILE else None))
    return out


def tar_size(parts: list[Member]) -> int:
    """The length of the tar of parts: headers, padded file bytes, end blocks, padded to a
    whole record."""
    size = 2 * BLOCK  # two zero blocks end the archive
    for m in parts:
        size += len(m.header)
        if m.file is not None:
            size += m.file.size + _padding(m.file.size)
    return size + -size % RECORD


def tar_bytes(service: ArchiveService, parts: list[Member]) -> Generator[bytes, None, None]:
    """The tar of parts, in pieces of about FLUSH_BYTES or one decoded xorb range; blocking
    (call next() from a worker thread). StoreCorrupt when stored bytes are damaged."""
    pending = bytearray()
    written = 0
    for m in parts:
        pending += m.header
        if m.file is not None:
            assert m.file.xet_hash is not None  # Manifest guarantees it for files
            record = service.bound_file(m.file.xet_hash)
            got = 0
            for piece in read_file(service.store, record):
                got += len(piece)
                if len(pending) + len(piece) < FLUSH_BYTES:
                    pending += piece
                    continue
                written += len(pending) + len(piece)
                if pending:
                    yield bytes(pending)
                    pending.clear()
                yield piece
            if got != m.file.size:
                raise StoreCorrupt(
                    f"{m.file.path}: {got} bytes stored, {m.file.size} bound; "
                    "run `arkfs store check`"
                )
            pending += bytes(_padding(got))
        if len(pending) >= FLUSH_BYTES:
            written += len(pending)
            yield bytes(pending)
            pending.clear()
    end = written + len(pending) + 2 * BLOCK
    pending += bytes(2 * BLOCK + -end % RECORD)
    yield bytes(pending)
