"""Real xorbs, file records and shards for the store tests, built from a seeded RNG."""

import dataclasses
import hashlib
import random
import string
from collections.abc import Sequence

from arkfs.store.base import DedupEntry, FileRecord
from arkfs.xet.hashing import ZERO_HASH, chunk_hash, file_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.shard import APP_ID_SIZE, Shard, serialize_upload
from arkfs.xet.xorb import SerializedXorb, parse_xorb, serialize_xorb


def random_xorb(rng: random.Random, chunks: int = 4, max_chunk: int = 8192) -> SerializedXorb:
    """A xorb of random chunks, some of them compressible."""
    data = []
    for _ in range(chunks):
        size = rng.randint(1, max_chunk)
        data.append(rng.randbytes(size) if rng.random() < 0.5 else bytes([rng.randrange(4)]) * size)
    return serialize_xorb([(chunk_hash(d), d) for d in data])


def file_of(xorbs: Sequence[SerializedXorb]) -> FileRecord:
    """The file made of every chunk of xorbs, in order: one whole-xorb term each."""
    terms = tuple(Term(x.hash, 0, x.footer.num_chunks, x.footer.unpacked_ends[-1]) for x in xorbs)
    chunks = [
        pair
        for x in xorbs
        for pair in zip(x.footer.chunk_hashes, x.footer.chunk_sizes(), strict=True)
    ]
    content = b"".join(c for x in xorbs for c in parse_xorb(x.data).chunks)
    return FileRecord(file_hash(chunks), len(content), hashlib.sha256(content).digest(), terms)


def first_chunks(xorbs: Sequence[SerializedXorb]) -> list[DedupEntry]:
    """Dedup entries for the first chunk of every xorb."""
    return [DedupEntry(x.footer.chunk_hashes[0], x.hash, 0) for x in xorbs]


def shard_blob(rng: random.Random) -> tuple[bytes, bytes]:
    """A shard of its own (no files, a random application identifier) and a hash to name it
    by: the store checks the records it is given, and `check` the shard by the intake rule."""
    app_id = "".join(rng.choices(string.ascii_letters, k=APP_ID_SIZE)).encode()
    data = serialize_upload(Shard(app_id=app_id))
    return chunk_hash(data), data


def bad_records(
    xs: list[SerializedXorb], missing: SerializedXorb
) -> list[tuple[list[FileRecord], list[DedupEntry], str]]:
    """Shard records that disagree with xorbs (missing is not stored), each with the words
    of its rejection."""
    good = file_of(xs)
    t0 = good.terms[0]
    n0 = xs[0].footer.num_chunks
    return [
        ([file_of([*xs, missing])], [], "is missing"),
        ([dataclasses.replace(good, file_hash=ZERO_HASH)], [], "hash to"),
        ([dataclasses.replace(good, size=good.size + 1)], [], "terms hold"),
        ([dataclasses.replace(good, sha256=b"short")], [], "SHA-256"),
        (
            [dataclasses.replace(good, terms=(dataclasses.replace(t0, end=n0 + 1),))],
            [],
            "which has",
        ),
        (
            [dataclasses.replace(good, terms=(dataclasses.replace(t0, start=1, end=1),))],
            [],
            "covers chunks",
        ),
        (
            [
                dataclasses.replace(
                    good, terms=(dataclasses.replace(t0, unpacked_length=1), *good.terms[1:])
                )
            ],
            [],
            "claims 1 bytes",
        ),
        ([good], [DedupEntry(ZERO_HASH, xs[0].hash, 0)], "another hash"),
        ([good], [DedupEntry(xs[0].footer.chunk_hashes[0], xs[0].hash, n0)], "outside"),
        ([good], [DedupEntry(xs[0].footer.chunk_hashes[0], missing.hash, 0)], "is missing"),
        ([good], [DedupEntry(b"x", xs[0].hash, 0)], "not a 32-byte hash"),
    ]
