"""Extended attributes of the mount: the ARK, its ERC record, the XET hashes, cache state.

    user.ark.id                 the normalized ARK
    user.ark.erc                the whole ERC record (ANVL)
    user.ark.who|what|when|where  the kernel elements of its `erc:` segment
    user.ark.license|description|keyword|creator|related  its rich elements (arkfs.ark.metadata),
                                a repeated one's values one per line
    user.ark.support.*          every element of its `erc-support:` segment
    user.ark.versions           archive roots: every version, one line each (VersionInfo.summary)
    user.ark.url                an ARK that is no archive: the URL its resolution ended at
    user.ark.info               ... and its responder's ?info reply, when that is no ERC
    user.ark.withdrawn          a withdrawn archive: when and why (`WHEN REASON`)
    user.xet.hash, user.xet.sha256  a file's XET hash string and SHA-256 (hex)
    user.arkfs.cached           files: the fraction of the file in the chunk cache
    user.arkfs.stats            root: the mount's counters as JSON (`arkfs stats`)
    user.*                      the source's own attributes, as published (source_xattrs)

Only attributes with a value exist; symlinks have none (Linux refuses `user.*` on them).
listxattr never lists the volatile ones (a copy would keep a stale value), only getxattr
answers them; with -o hide_xattrs it lists none of these (as CVMFS_HIDE_MAGIC_XATTRS).
"""

import json
from collections.abc import Iterable, Sequence

from arkfs.archive.manifest import Entry, Manifest
from arkfs.archive.record import VersionInfo
from arkfs.archive.withdrawal import withdrawal_in
from arkfs.ark.erc import KERNEL, Erc, Segment
from arkfs.ark.errors import ArkError
from arkfs.ark.metadata import RICH, values
from arkfs.util.urls import without_secrets
from arkfs.xet.hashing import hash_to_string

ARK_ID = "user.ark.id"
ARK_ERC = "user.ark.erc"
SUPPORT_PREFIX = "user.ark.support."
VERSIONS = "user.ark.versions"
ARK_URL = "user.ark.url"
ARK_INFO = "user.ark.info"
WITHDRAWN = "user.ark.withdrawn"
XET_HASH = "user.xet.hash"
XET_SHA256 = "user.xet.sha256"
CACHED = "user.arkfs.cached"
STATS = "user.arkfs.stats"
VOLATILE = frozenset((CACHED, STATS))  # change while the mount runs: never listed
OWN_PREFIXES = ("user.ark.", "user.xet.", "user.arkfs.")  # hidden by -o hide_xattrs


def listed(names: Iterable[str], hide_own: bool) -> list[str]:
    """The attribute names listxattr gives: never the volatile ones, and with hide_own
    (-o hide_xattrs) none of arkfs's own."""
    return [n for n in names if n not in VOLATILE and not (hide_own and n.startswith(OWN_PREFIXES))]


def _support(segment: Segment) -> dict[str, str]:
    """Every element of an erc-support segment; a repeated label's values one per line."""
    values: dict[str, list[str]] = {}
    for label, value in segment.elements():
        values.setdefault(SUPPORT_PREFIX + label, []).append(value)
    return {name: "\n".join(v) for name, v in values.items()}


def ark_xattrs(ark: str, erc: Erc) -> dict[str, str]:
    """The attributes of anything with an ARK: its id and ERC record."""
    out = {ARK_ID: ark, ARK_ERC: erc.to_anvl()}
    for label in KERNEL:
        value = getattr(erc, label)
        if value is not None:
            out[f"user.ark.{label}"] = value
    for label in RICH:
        if values(erc, label):
            out[f"user.ark.{label}"] = "\n".join(values(erc, label))
    if erc.support is not None:
        out.update(_support(erc.support))
    withdrawn = withdrawal_in(erc, 0)
    if withdrawn is not None:
        out[WITHDRAWN] = withdrawn.line()
    return out


def url_xattr(url: str | None) -> dict[str, str]:
    """user.ark.url: where an ARK's resolution ended (never with a credential in it)."""
    return {ARK_URL: without_secrets(url)} if url else {}


def object_xattrs(ark: str, url: str, info: str | None) -> dict[str, str]:
    """The attributes of an ARK that resolved to an object: its id, final URL, and the ERC
    record its responder's ?info gave (ANVL, or JSON with an "erc" member), or that reply
    as it came."""
    out = {ARK_ID: ark, **url_xattr(url)}
    if not info:
        return out
    text = info
    try:
        obj = json.loads(info)
    except ValueError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("erc"), str):
        text = obj["erc"]
    try:
        return ark_xattrs(ark, Erc.from_anvl(text)) | out
    except ArkError:
        return out | {ARK_INFO: info}


def versions_xattr(versions: Sequence[VersionInfo]) -> dict[str, str]:
    """The versions of an archive, oldest first: name, time, files, size and message."""
    return {VERSIONS: "\n".join(v.summary() for v in versions)}


def file_xattrs(entry: Entry) -> dict[str, str]:
    """The content hashes of a file entry."""
    out = {}
    if entry.xet_hash is not None:
        out[XET_HASH] = hash_to_string(entry.xet_hash)
    if entry.sha256 is not None:
        out[XET_SHA256] = entry.sha256.hex()
    return out


def source_xattrs(pairs: Sequence[tuple[str, bytes]]) -> dict[str, str]:
    """The source's attributes kept in the manifest, as published; values that are not
    UTF-8 stay the bytes they are (surrogate escapes, encoded back when served)."""
    return {name: value.decode("utf-8", "surrogateescape") for name, value in pairs}


def root_xattrs(manifest: Manifest) -> dict[str, str]:
    """The source attributes of an archive's root directory (none in manifests written
    before the root was kept)."""
    return {} if manifest.root is None else source_xattrs(manifest.root.xattrs)


def format_fraction(fraction: float) -> str:
    """A cached fraction as user.arkfs.cached shows it, e.g. '0.25'."""
    return f"{fraction:.2f}"
