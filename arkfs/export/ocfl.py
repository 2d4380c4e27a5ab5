"""OCFL 1.1 objects of an archive with every version: each version's new content stored
once under vN/content, unchanged files named by digest only (OCFL 1.1, Manifest; Version).

Digests are SHA-512 (Digests: the spec's default and required choice for content
addressing), computed while each distinct file is written; files with the same XET hash
are the same bytes and stored once. Each version's `message` holds its publish message and
its ERC record (ANVL), and `user` names the ERC's who. OCFL holds only files: directories
exist through the files in them, and symlinks are left out (arkfs-symlinks.txt of a BagIt
export keeps them).
"""

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from arkfs.archive.manifest import Kind
from arkfs.archive.record import Archive
from arkfs.export.bagit import Read, new_directory

SPEC = "ocfl_object_1.1"
INVENTORY_TYPE = "https://ocfl.io/1.1/spec/#inventory"
CONTENT = "content"
ALGORITHM = "sha512"


def _message(archive: Archive) -> str:
    """A version's message: its own, then its ERC record."""
    erc = archive.erc.to_anvl().strip()
    own = archive.version.message.strip()
    return f"{own}\n\n{erc}" if own else erc


def _write_inventory(where: Path, inventory: dict[str, Any]) -> None:
    """inventory.json and its sidecar (Inventory Digest) in the directory where."""
    text = json.dumps(inventory, indent=2, ensure_ascii=False).encode()
    (where / "inventory.json").write_bytes(text)
    digest = hashlib.sha512(text).hexdigest()
    (where / f"inventory.json.{ALGORITHM}").write_text(f"{digest}  inventory.json\n")


def write_object(ark: str, versions: Sequence[Archive], read: Read, dest: Path) -> None:
    """Write the OCFL object of ark's versions (oldest first, v1 to vN) into the new
    directory dest (FileExistsError if it exists); on any failure nothing is left of dest."""
    with new_directory(dest):
        _write_object(ark, versions, read, dest)


def _write_object(ark: str, versions: Sequence[Archive], read: Read, dest: Path) -> None:
    (dest / f"0={SPEC}").write_text(SPEC + "\n")  # Object Conformance Declaration
    manifest: dict[str, list[str]] = {}
    digests: dict[bytes, str] = {}  # XET hash to SHA-512 of the content stored
    inventory: dict[str, Any] = {
        "id": ark,
        "type": INVENTORY_TYPE,
        "digestAlgorithm": ALGORITHM,
        "head": "",
        "contentDirectory": CONTENT,
        "manifest": manifest,
        "versions": {},
    }
    for n, archive in enumerate(versions, 1):
        name = f"v{n}"
        (dest / name).mkdir()
        state: dict[str, list[str]] = {}
        for e in archive.manifest.entries:
            if e.kind is not Kind.FILE:
                continue
            assert e.xet_hash is not None  # Manifest guarantees it for files
            digest = digests.get(e.xet_hash)
            if digest is None:
                content = f"{name}/{CONTENT}/{e.path}"
                digest = _store(dest / content, read(e), e.mtime_ns)
                digests[e.xet_hash] = digest
                manifest.setdefault(digest, []).append(content)
            state.setdefault(digest, []).append(e.path)
        created = datetime.fromtimestamp(archive.version.created, UTC)
        version: dict[str, Any] = {
            "created": created.isoformat(timespec="seconds"),
            "state": state,
            "message": _message(archive),
        }
        if archive.erc.who:
            version["user"] = {"name": archive.erc.who}
        inventory["versions"][name] = version
        inventory["head"] = name
        _write_inventory(dest / name, inventory)
    _write_inventory(dest, inventory)


def _store(path: Path, pieces: Iterable[bytes], mtime_ns: int) -> str:
    """Write pieces to path; their SHA-512 in hex."""
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha512()
    with open(path, "wb") as out:
        for piece in pieces:
            digest.update(piece)
            out.write(piece)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    return digest.hexdigest()
