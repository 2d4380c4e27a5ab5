"""Real content for the backend tests: files cut into chunks, packed into xorbs, and one
upload-form shard that registers them, built with arkfs.xet the way a publisher does."""

import hashlib
import random
from dataclasses import dataclass

from arkfs.archive.manifest import Entry, Kind, Manifest, build
from arkfs.ark.erc import Erc
from arkfs.backend.base import Backend
from arkfs.xet.chunking import chunk_stream
from arkfs.xet.compression import ChunkData
from arkfs.xet.hashing import chunk_hash, file_hash, is_global_dedup_eligible, verification_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.shard import FileBlock, Shard, cas_block, serialize_upload
from arkfs.xet.xorb import SerializedXorb, XorbBuilder, decode_range

ARK = "ark:99999/fk4backend"


@dataclass(frozen=True)
class File:
    """One file of the content: its bytes, XET hash and chunk hashes."""

    data: bytes
    hash: bytes
    chunks: tuple[bytes, ...]


@dataclass(frozen=True)
class Content:
    """Files, the xorbs that hold their chunks, and the shard that registers them."""

    files: dict[str, File]
    xorbs: tuple[SerializedXorb, ...]
    shard: bytes


def sample_files() -> dict[str, bytes]:
    """Edge cases: empty, one chunk, many chunks, a chunk repeated within a file, text."""
    rng = random.Random(20)
    block = rng.randbytes(150_000)
    words = [b"archive", b"ark", b"chunk", b"xorb", b"\n"]
    return {
        "empty": b"",
        "one-byte": b"\x42",
        "small": rng.randbytes(5000),
        "random": rng.randbytes(1_200_000),
        "repeated": block * 3 + rng.randbytes(30_000) + block,
        "text": b" ".join(rng.choice(words) for _ in range(150_000)),
    }


def build_content(files: dict[str, bytes], max_chunks: int = 6) -> Content:
    """Chunk every file, store each distinct chunk once in xorbs of at most max_chunks
    chunks (so files span several xorbs and terms), and describe it all in one shard."""
    builders = [XorbBuilder(max_chunks=max_chunks)]
    where: dict[bytes, tuple[int, int]] = {}  # chunk hash -> (builder index, chunk index)
    layouts: dict[str, list[tuple[bytes, int, int]]] = {}
    eligible: set[bytes] = set()
    for name, data in files.items():
        layout = []
        for i, view in enumerate(chunk_stream([data])):
            piece = bytes(view)
            h = chunk_hash(piece)
            if is_global_dedup_eligible(h, i == 0):
                eligible.add(h)
            if h not in where:
                if not builders[-1].fits(piece):
                    builders.append(XorbBuilder(max_chunks=max_chunks))
                where[h] = (len(builders) - 1, builders[-1].add(h, piece))
            layout.append((h, *where[h]))
        layouts[name] = layout
    xorbs = tuple(b.build() for b in builders if len(b))
    out: dict[str, File] = {}
    blocks = []
    for name, layout in layouts.items():
        terms: list[list[int]] = []  # [xorb index, start, end]
        for _, x, c in layout:
            if terms and terms[-1][0] == x and terms[-1][2] == c:
                terms[-1][2] += 1
            else:
                terms.append([x, c, c + 1])
        hashes = tuple(h for h, _, _ in layout)
        sizes = [xorbs[x].footer.unpacked_size(c) for _, x, c in layout]
        fh = file_hash(list(zip(hashes, sizes, strict=True)))
        out[name] = File(files[name], fh, hashes)
        xterms = tuple(
            Term(
                xorbs[x].hash,
                s,
                e,
                sum(xorbs[x].footer.unpacked_size(i) for i in range(s, e)),
            )
            for x, s, e in terms
        )
        verification = tuple(
            verification_hash(xorbs[x].footer.chunk_hashes[s:e]) for x, s, e in terms
        )
        sha = hashlib.sha256(files[name]).digest()
        blocks.append(FileBlock(fh, xterms, verification if xterms else None, sha))
    cas = tuple(cas_block(x.footer, len(x.data), eligible.__contains__) for x in xorbs)
    return Content(out, xorbs, serialize_upload(Shard(tuple(blocks), cas)))


async def upload(backend: Backend, content: Content) -> None:
    """Upload every xorb, then the shard, through the backend."""
    for x in content.xorbs:
        await backend.upload_xorb(x.hash, x.data)
    await backend.upload_shard(content.shard)


async def read_range(backend: Backend, fh: bytes, start: int, end: int) -> bytes:
    """Bytes [start, end) of a file as a reader gets them: plan, fetch, footer, decode."""
    rec = await backend.reconstruction(fh, start, end)
    footers = {}
    pieces: list[ChunkData] = []
    for term in rec.terms:
        fr = rec.fetch_for(term)
        if term.xorb_hash not in footers:
            footers[term.xorb_hash] = await backend.footer(term.xorb_hash, fr)
        data = await backend.fetch(term.xorb_hash, fr)
        pieces += decode_range(data, footers[term.xorb_hash], term.start, term.end, fr.byte_start)
    joined = b"".join(pieces)
    skip = rec.offset_into_first_range
    return joined[skip : skip + end - start]


def manifest_of(files: dict[str, File], ark: str = ARK) -> Manifest:
    """A manifest of files under a directory 'data', with their real hashes and sizes."""
    entries = [Entry("data", Kind.DIR, 0, 0o755, 1_700_000_000_000_000_000)]
    entries += [
        Entry(
            f"data/{name}",
            Kind.FILE,
            len(f.data),
            0o644,
            1_700_000_000_000_000_000,
            f.hash,
            hashlib.sha256(f.data).digest(),
        )
        for name, f in files.items()
    ]
    return build(ark, entries, created=1_700_000_000.0)


def erc_of(ark: str = ARK) -> Erc:
    return Erc(who="Tester, A.", what="Backend test archive", when="2024", where=ark)
