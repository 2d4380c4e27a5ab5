"""hf_xet, the reference client, as the judge: same file hashes, and its xorbs parse here."""

import os
from pathlib import Path

import hf_xet
import pytest

from arkfs.xet.chunking import chunk_stream
from arkfs.xet.compression import Compression
from arkfs.xet.digest import digest_stream
from arkfs.xet.hashing import chunk_hash, hash_to_string, string_to_hash
from arkfs.xet.xorb import parse_xorb, serialize_xorb
from tests.support.corpus import write_corpus
from tests.support.hfxet import upload_files
from tests.support.recording_cas import Recording, recording_cas


@pytest.fixture(scope="module")
def corpus_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_corpus(tmp_path_factory.mktemp("corpus"))


def upload(paths: list[Path]) -> tuple[list[object], Recording]:
    with recording_cas() as (url, rec):
        results = upload_files(url, paths)
    return results, rec


def test_file_hashes_match_hf_xet(corpus_paths: dict[str, Path]) -> None:
    names = sorted(corpus_paths)
    theirs = hf_xet.hash_files([str(corpus_paths[n]) for n in names])
    for name, ref in zip(names, theirs, strict=True):
        with corpus_paths[name].open("rb") as f:
            ours = digest_stream(f)
        assert (hash_to_string(ours.file_hash), ours.size) == (ref.hash, ref.file_size), name


def test_hf_xet_xorbs_parse_and_match_our_chunking(corpus_paths: dict[str, Path]) -> None:
    paths = [p for n, p in sorted(corpus_paths.items()) if n != "empty"]
    results, rec = upload(paths)
    assert rec.xorbs, "hf_xet uploaded no xorb"
    ours: set[bytes] = set()
    for p in paths:
        ours.update(chunk_hash(c) for c in chunk_stream([p.read_bytes()]))
    theirs: set[bytes] = set()
    for name, body in rec.xorbs.items():
        parsed = parse_xorb(body, expected_hash=string_to_hash(name))
        theirs.update(parsed.footer.chunk_hashes)
        # Our serialization of the same chunks: same hash, chunk hashes, unpacked offsets.
        again = serialize_xorb(list(zip(parsed.footer.chunk_hashes, parsed.chunks, strict=True)))
        assert again.hash == parsed.footer.xorb_hash
        assert again.footer.chunk_hashes == parsed.footer.chunk_hashes
        assert again.footer.unpacked_ends == parsed.footer.unpacked_ends
        # With compression None, the chunks hf_xet left uncompressed are byte-identical.
        plain = serialize_xorb(
            list(zip(parsed.footer.chunk_hashes, parsed.chunks, strict=True)), Compression.NONE
        )
        for i, header in enumerate(parsed.headers):
            if header.compression == Compression.NONE:
                a, b = parsed.footer.packed_range(i, i + 1)
                c, d = plain.footer.packed_range(i, i + 1)
                assert body[a:b] == plain.data[c:d]
    assert theirs == ours  # hf_xet deduplicates within the session, so compare as sets
    assert len(results) == len(paths)


def test_random_data_xorb_is_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "random"
    path.write_bytes(os.urandom(3_000_000))
    _, rec = upload([path])
    ((name, body),) = rec.xorbs.items()
    parsed = parse_xorb(body)
    ours = serialize_xorb(
        list(zip(parsed.footer.chunk_hashes, parsed.chunks, strict=True)), Compression.NONE
    )
    assert ours.hash == string_to_hash(name)
    assert ours.data[: ours.footer.packed_ends[-1]] == body
