"""Reconstructions and shard registrations computed from a Store, shared by server and embedded use.

Both are blocking (they read xorb footers): call them from a worker thread.
"""

from collections.abc import Callable

from arkfs.store.base import DedupEntry, FileRecord, Store
from arkfs.store.errors import NotFound, Rejected
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import FetchRange, Reconstruction, plan_range
from arkfs.xet.shard import CasBlock, cas_block, parse_shard, verify_file_block


def merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint chunk spans covering spans; overlapping or touching ones merge.

    hf_xet fails ("range end out of bounds") on overlapping fetch ranges of one xorb,
    which a file whose chunks repeat would otherwise get.
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def plan_reconstruction(
    store: Store, record: FileRecord, start: int, end: int, url_for: Callable[[bytes], str]
) -> Reconstruction:
    """Get File Reconstruction for bytes [start, end): overlapping terms trimmed to chunks.

    url_for names where a xorb's bytes can be fetched (a signed URL, or any key).
    """
    if record.size == 0:
        return Reconstruction((), 0, {})
    footers = {}

    def chunk_sizes(h: bytes) -> list[int]:
        if h not in footers:
            footers[h] = store.xorb_footer(h)
        return footers[h].chunk_sizes()

    terms, offset = plan_range(record.terms, chunk_sizes, start, end)
    spans: dict[bytes, list[tuple[int, int]]] = {}
    for t in terms:
        spans.setdefault(t.xorb_hash, []).append((t.start, t.end))
    fetch = {}
    for xh, chunk_spans in spans.items():
        url = url_for(xh)
        ranges = []
        for cs, ce in merge_spans(chunk_spans):
            lo, hi = footers[xh].packed_range(cs, ce)
            ranges.append(FetchRange(url, cs, ce, lo, hi - 1))
        fetch[xh] = tuple(ranges)
    return Reconstruction(tuple(terms), offset, fetch)


def shard_records(store: Store, body: bytes) -> tuple[list[FileRecord], list[DedupEntry]]:
    """Parse an uploaded shard and check its verification entries against the stored xorbs.

    Raises Rejected with a one-line reason; the store checks each file against the xorb
    footers again in put_shard.
    """
    try:
        shard = parse_shard(body)
    except XetError as exc:
        raise Rejected(f"invalid shard: {exc}") from None
    named = {t.xorb_hash for f in shard.files for t in f.terms}
    named |= {b.xorb_hash for b in shard.cas_blocks}
    footers = {}
    for xh in named:
        try:
            footers[xh] = store.xorb_footer(xh)
        except NotFound:
            raise Rejected(
                f"shard references xorb {hash_to_string(xh)}, which was not uploaded"
            ) from None
    records = []
    dedup = []
    for block in shard.files:
        if block.verification is not None:
            try:
                verify_file_block(block, lambda h, s, e: footers[h].chunk_hashes[s:e])
            except (XetError, IndexError) as exc:
                raise Rejected(f"shard verification entries: {exc}") from None
        terms = block.terms
        records.append(FileRecord(block.file_hash, block.size, block.sha256, terms))
        if terms:  # Eligibility Criteria: the first chunk of every file
            first = terms[0]
            if first.start < footers[first.xorb_hash].num_chunks:
                ch = footers[first.xorb_hash].chunk_hashes[first.start]
                dedup.append(DedupEntry(ch, first.xorb_hash, first.start))
    for cas in shard.cas_blocks:
        dedup += (
            DedupEntry(c.chunk_hash, cas.xorb_hash, i)
            for i, c in enumerate(cas.chunks)
            if c.global_dedup_eligible
        )
    return records, dedup


def dedup_blocks(store: Store, chunk: bytes) -> list[CasBlock]:
    """CAS blocks of every xorb that holds a global-dedup chunk."""
    return [
        cas_block(store.xorb_footer(xh), store.xorb_size(xh), lambda h: h == chunk)
        for xh in dict.fromkeys(loc.xorb_hash for loc in store.dedup_lookup(chunk))
    ]
