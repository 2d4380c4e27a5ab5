"""Reading a BagIt bag (RFC 8493) to publish its payload: the bag's declaration, tag
manifest and Payload-Oxum are checked before any hashing; its manifest-sha256.txt is
checked against the SHA-256 that publishing computes while hashing each file, before the
version is bound; bag-info.txt gives ERC fields where they map.
"""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from arkfs.archive.manifest import Kind, Manifest
from arkfs.export.bagit import ERC_PREFIX, PAYLOAD, RESERVED

DECLARATION = "bagit.txt"
MANIFEST = "manifest-sha256.txt"
TAG_MANIFEST = "tagmanifest-sha256.txt"
# bag-info.txt labels that fill an ERC field when no ERC-label of arkfs's own export does
# (RFC 8493, Bag-Info): the reverse of bagit.RESERVED, and the date of bagging as when.
ERC_FROM_INFO = {label: field for field, label in RESERVED.items()} | {"Bagging-Date": "when"}


# The ERC fields a bag gives; not where, which names the ARK being bound, not the bag's.
TAKEN = ("who", "what", "when")


class BagError(ValueError):
    """The bag is not valid: what is wrong, naming the file."""


@dataclass(frozen=True)
class Bag:
    """A bag found valid so far: its payload directory, the SHA-256 its manifest gives each
    payload path (relative to data/), and the ERC fields of its bag-info.txt."""

    payload: Path
    digests: dict[str, bytes]
    erc: dict[str, str]
    octets: int | None  # Payload-Oxum's, if given

    def check(self, manifest: Manifest) -> None:
        """BagError unless manifest (the files as hashed) is exactly the bag's manifest."""
        hashed = {e.path: e.sha256 for e in manifest.entries if e.kind is Kind.FILE}
        for path, digest in sorted(self.digests.items()):
            if path not in hashed:
                raise BagError(f"{self.payload}/{path}: in {MANIFEST} but not in the payload")
            if hashed[path] != digest:
                raise BagError(
                    f"{self.payload}/{path}: its SHA-256 is not the one {MANIFEST} gives"
                )
        for path in sorted(hashed.keys() - self.digests.keys()):
            raise BagError(f"{self.payload}/{path}: in the payload but not in {MANIFEST}")
        octets = sum(e.size for e in manifest.entries if e.kind is Kind.FILE)
        if self.octets is not None and octets != self.octets:
            raise BagError(f"{self.payload}: {octets} bytes, but Payload-Oxum says {self.octets}")


def decode_path(text: str) -> str:
    """A manifest line's path, its %0D, %0A and %25 decoded (RFC 8493, Manifest File Format)."""
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise BagError(f"{path}: missing; a bag needs it") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BagError(f"{path}: unreadable ({exc})") from None


def _manifest(path: Path) -> dict[str, bytes]:
    """path (a manifest file) as {path: digest}; BagError on a malformed line."""
    digests = {}
    for n, line in enumerate(_lines(path), 1):
        digest, _, name = line.partition(" ")
        name = decode_path(name.lstrip(" "))
        try:
            value = bytes.fromhex(digest)
        except ValueError:
            value = b""
        if len(value) != hashlib.sha256().digest_size or not name:
            raise BagError(f"{path}, line {n}: not 'SHA-256 path'")
        digests[name] = value
    return digests


def _info(path: Path) -> list[tuple[str, str]]:
    """bag-info.txt as (label, value) pairs, continuation lines joined (Bag-Info)."""
    if not path.exists():
        return []
    pairs: list[tuple[str, str]] = []
    for n, line in enumerate(_lines(path), 1):
        if line[:1] in (" ", "\t") and pairs:
            label, value = pairs[-1]
            pairs[-1] = (label, f"{value}\n{line.strip()}")
            continue
        label, colon, value = line.partition(":")
        if not colon or not label.strip():
            raise BagError(f"{path}, line {n}: not 'Label: value'")
        pairs.append((label.strip(), value.strip()))
    return pairs


def read_bag(root: Path) -> Bag:
    """The bag at root, its declaration, tag manifest and Payload-Oxum checked (the payload
    digests are checked later, by Bag.check, on what publishing hashed)."""
    declared = dict(line.partition(": ")[::2] for line in _lines(root / DECLARATION))
    if not declared.get("BagIt-Version", "").startswith(("0.9", "1.")):
        raise BagError(f"{root / DECLARATION}: declares no BagIt-Version arkfs reads (0.97, 1.0)")
    if (root / TAG_MANIFEST).exists():
        for name, digest in _manifest(root / TAG_MANIFEST).items():
            try:
                data = (root / name).read_bytes()
            except OSError:
                raise BagError(f"{root / name}: in {TAG_MANIFEST} but unreadable") from None
            if hashlib.sha256(data).digest() != digest:
                raise BagError(f"{root / name}: its SHA-256 is not the one {TAG_MANIFEST} gives")
    digests = {}
    for name, digest in _manifest(root / MANIFEST).items():
        if not name.startswith(PAYLOAD + "/"):
            raise BagError(f"{root / MANIFEST}: {name!r} is outside {PAYLOAD}/")
        digests[name[len(PAYLOAD) + 1 :]] = digest
    info = _info(root / "bag-info.txt")
    octets = _check_oxum(root, dict(info).get("Payload-Oxum"), len(digests))
    return Bag(root / PAYLOAD, digests, _erc(info), octets)


def _check_oxum(root: Path, oxum: str | None, files: int) -> int | None:
    """Payload-Oxum's octets; BagError if its file count (octets.streams) disagrees with the
    manifest's (the octets are checked once the files are hashed)."""
    if oxum is None:
        return None
    octets, _, streams = oxum.partition(".")
    if not (octets.isdigit() and streams.isdigit()):
        raise BagError(f"{root}/bag-info.txt: Payload-Oxum {oxum!r} is not OCTETS.FILES")
    if int(streams) != files:
        raise BagError(f"{root}: Payload-Oxum says {streams} files, {MANIFEST} lists {files}")
    return int(octets)


def _erc(info: list[tuple[str, str]]) -> dict[str, str]:
    """The ERC fields (TAKEN) bag-info gives: ERC-label first, else the reserved labels."""
    fields: dict[str, str] = {}
    for label, value in info:
        field = label[len(ERC_PREFIX) :] if label.startswith(ERC_PREFIX) else None
        if field in TAKEN:
            fields.setdefault(field, value)
    for label, value in info:
        field = ERC_FROM_INFO.get(label)
        if field is not None and value:
            fields.setdefault(field, value)
    return fields
