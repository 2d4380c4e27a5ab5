"""BagIt 1.0 bags (RFC 8493) of one archive version: the tag files, and a writer that
fills a directory from any verified read of the files.

The payload is the version's files under `data/`; `manifest-sha256.txt` lists their
stored SHA-256 digests, `bag-info.txt` carries the ERC record, and
`tagmanifest-sha256.txt` fixes the tag files. A bag has no symlinks (RFC 8493, Payload
Directory: files only), so an archive's symlinks are listed in the tag file
`arkfs-symlinks.txt` instead (path, tab, target), as a bag may carry other tag files.
"""

import hashlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from arkfs.archive.manifest import Entry, Kind, entry_ark
from arkfs.archive.record import Archive
from arkfs.ark.version_qualifier import versioned

INFLECTION = "bag"  # the query (`ark:NAAN/Name?bag`) that asks for the bag as a tar
PAYLOAD = "data"
BAGIT_TXT = b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
SYMLINKS = "arkfs-symlinks.txt"
ERC_PREFIX = "ERC-"  # bag-info.txt label of each ERC element: ERC-who, ERC-what, ...
# ERC elements that also fill a reserved bag-info.txt label (RFC 8493, Bag-Info)
RESERVED = {"who": "Source-Organization", "what": "External-Description"}
Digest = Callable[[Entry], bytes]  # a file entry's SHA-256
Read = Callable[[Entry], Iterable[bytes]]  # a file entry's bytes, verified


def encode_path(path: str) -> str:
    """A path as a manifest line writes it: CR, LF and % percent-encoded (RFC 8493,
    Manifest File Format)."""
    return path.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _fold(value: str) -> str:
    """A bag-info value on one logical line: later lines continue with leading whitespace."""
    return "\n ".join(value.splitlines()) or ""


def bag_info(archive: Archive) -> bytes:
    """bag-info.txt: the reserved labels arkfs knows, then every ERC element as ERC-label."""
    files = archive.manifest.files
    oxum = f"{sum(e.size for e in files)}.{len(files)}"
    ark = entry_ark(versioned(archive.ark, archive.version.version), "")
    day = datetime.fromtimestamp(archive.version.created, UTC).strftime("%Y-%m-%d")
    lines = [("External-Identifier", str(ark)), ("Bagging-Date", day), ("Payload-Oxum", oxum)]
    elements = archive.erc.elements()
    lines += [(RESERVED[k], v) for k, v in elements if k in RESERVED and v]
    lines += [(ERC_PREFIX + k, v) for k, v in elements]
    return "".join(f"{label}: {_fold(value)}\n" for label, value in lines).encode()


def _manifest(lines: Iterable[tuple[bytes, str]]) -> bytes:
    return "".join(f"{digest.hex()}  {encode_path(p)}\n" for digest, p in lines).encode()


def tag_files(archive: Archive, digest: Digest) -> list[tuple[str, bytes]]:
    """Every tag file of the bag of archive, in the order to write them (the tag manifest,
    which fixes the others, last)."""
    files = [e for e in archive.manifest.entries if e.kind is Kind.FILE]
    payload = _manifest((digest(e), f"{PAYLOAD}/{e.path}") for e in files)
    tags = [
        ("bagit.txt", BAGIT_TXT),
        ("bag-info.txt", bag_info(archive)),
        ("manifest-sha256.txt", payload),
    ]
    links = [e for e in archive.manifest.entries if e.kind is Kind.SYMLINK]
    if links:
        text = "".join(f"{encode_path(e.path)}\t{encode_path(e.target or '')}\n" for e in links)
        tags.append((SYMLINKS, text.encode()))
    tagmanifest = _manifest((hashlib.sha256(data).digest(), name) for name, data in tags)
    return [*tags, ("tagmanifest-sha256.txt", tagmanifest)]


def write_bag(archive: Archive, digest: Digest, read: Read, dest: Path) -> None:
    """Write the bag of archive into the new directory dest (FileExistsError if it exists);
    on any failure (damaged stored bytes) nothing is left of dest."""
    with new_directory(dest):
        _write_bag(archive, digest, read, dest)


@contextmanager
def new_directory(dest: Path) -> Iterator[None]:
    """Make dest (FileExistsError if it exists); remove it again if the block fails, so that
    a half-written package is never taken for a whole one."""
    dest.mkdir(parents=True, exist_ok=False)
    try:
        yield
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def _write_bag(archive: Archive, digest: Digest, read: Read, dest: Path) -> None:
    data = dest / PAYLOAD
    data.mkdir()
    for e in archive.manifest.entries:
        target = data / e.path
        if e.kind is Kind.DIR:
            target.mkdir(exist_ok=True)
        elif e.kind is Kind.FILE:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as out:
                for piece in read(e):
                    out.write(piece)
            os.utime(target, ns=(e.mtime_ns, e.mtime_ns))
    for name, body in tag_files(archive, digest):
        (dest / name).write_bytes(body)
