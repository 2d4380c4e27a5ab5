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
from arkfs.service.archive_service import ArchiveService
from arkfs.store.errors import StoreCorrupt
from arkfs.store.files import read_file

INFLECTION = "tar"  # the query (`ark:NAAN/Name?tar`) that asks for the tar
MEDIA_TYPE = "application/x-tar"
BLOCK = tarfile.BLOCKSIZE
RECORD = tarfile.RECORDSIZE  # the end of a tar is padded to a whole record, as tar(1) writes
FLUSH_BYTES = 1024 * 1024  # headers and small files are gathered up to this before a send
DIR_MODE = 0o755  # a directory a tar makes that is no entry of the archive (a bag's top)
# The permission bits a member keeps: setuid, setgid and sticky are cleared, as `git archive`
# does, so that `tar -x` as root never makes a setuid-root file from a published tree.
PERMISSIONS = 0o777
_TYPES = {Kind.DIR: tarfile.DIRTYPE, Kind.FILE: tarfile.REGTYPE, Kind.SYMLINK: tarfile.SYMTYPE}


@dataclass(frozen=True)
class Member:
    """One tar member: its header blocks, and the file entry whose bytes follow (if any)
    or the bytes themselves (a small file made on the spot, such as a bag's tag file)."""

    header: bytes
    file: Entry | None
    data: bytes = b""


def _padded(size: int) -> int:
    """size rounded up to whole blocks."""
    return size + -size % BLOCK


def _header(
    name: str, kind: Kind, mode: int, mtime: float, size: int, target: str, hard: bool = False
) -> bytes:
    """A member's header blocks; hard: a hard link to the member named target."""
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else _TYPES[kind]
    info.mode, info.mtime = mode & PERMISSIONS, int(mtime)
    info.size, info.linkname = size, target
    return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")


def members(manifest: Manifest, path: str, top: str) -> list[Member]:
    """The members of directory path ('' the archive root) of manifest, all under the
    directory top."""
    d = manifest.entry(path) if path else manifest.top
    if d is None:
        raise ValueError(f"no directory {path!r} in {manifest.ark}")
    out = [Member(_header(top, Kind.DIR, d.mode, d.mtime_ns / 1e9, 0, ""), None)]
    prefix = path + "/" if path else ""
    linked: dict[str, str] = {}  # a hard-link group (its first path) -> its member's name here
    for e in manifest.entries:
        if not e.path.startswith(prefix):
            continue
        name = f"{top}/{e.path[len(prefix) :]}"
        if e.link is not None and e.link in linked:  # the bytes are in the tar already
            hard = _header(name, e.kind, e.mode, e.mtime_ns / 1e9, 0, linked[e.link], hard=True)
            out.append(Member(hard, None))
            continue
        if e.link is not None:  # the group's first name in this tar (its first may be outside)
            linked[e.link] = name
        size = e.size if e.kind is Kind.FILE else 0
        header = _header(name, e.kind, e.mode, e.mtime_ns / 1e9, size, e.target or "")
        out.append(Member(header, e if e.kind is Kind.FILE else None))
    return out


def made_dir(name: str, mtime: float) -> Member:
    """A member for the directory name (mode DIR_MODE)."""
    return Member(_header(name, Kind.DIR, DIR_MODE, mtime, 0, ""), None)


def made_file(name: str, data: bytes, mtime: float) -> Member:
    """A member for the file name holding data (mode 0644)."""
    return Member(_header(name, Kind.FILE, 0o644, mtime, len(data), ""), None, data)


def _content_size(parts: list[Member]) -> int:
    """The bytes of the members: headers, and file bytes padded to whole blocks."""
    return sum(
        len(m.header) + (_padded(m.file.size) if m.file else _padded(len(m.data))) for m in parts
    )


def tar_size(parts: list[Member]) -> int:
    """The length of the tar of parts: its members, two zero blocks that end it, and zeros
    up to a whole record."""
    size = _content_size(parts) + 2 * BLOCK
    return size + -size % RECORD


def tar_bytes(service: ArchiveService, parts: list[Member]) -> Generator[bytes, None, None]:
    """The tar of parts, in pieces of about FLUSH_BYTES or one decoded xorb range; blocking
    (call next() from a worker thread). StoreCorrupt when stored bytes are damaged."""
    end = tar_size(parts) - _content_size(parts)
    pending = bytearray()
    for m in parts:
        pending += m.header + m.data + bytes(_padded(len(m.data)) - len(m.data))
        if m.file is not None:
            for piece in file_bytes(service, m.file):
                if len(pending) + len(piece) < FLUSH_BYTES:
                    pending += piece
                    continue
                if pending:
                    yield bytes(pending)
                    pending.clear()
                yield piece
            pending += bytes(_padded(m.file.size) - m.file.size)
        if len(pending) >= FLUSH_BYTES:
            yield bytes(pending)
            pending.clear()
    yield bytes(pending + bytes(end))


def file_bytes(service: ArchiveService, entry: Entry) -> Generator[bytes, None, None]:
    """A bound file's bytes, chunk-verified, and exactly entry.size of them."""
    assert entry.xet_hash is not None  # Manifest guarantees it for files
    got = 0
    for piece in read_file(service.store, service.bound_file(entry.xet_hash)):
        got += len(piece)
        yield piece
    if got != entry.size:
        raise StoreCorrupt(
            f"{entry.path}: {got} bytes stored, {entry.size} bound; run `arkfs store check`"
        )
