"""Where a publisher starts a new xorb: before content-defined chunks, so that publishers
of the same bytes build the same xorbs, and a xorb named by its hash is stored once.

Xorbs filled to 64 MiB in the order a publisher meets its chunks differ as soon as two
publishers' trees differ anywhere before (another file first, one file more): 4 concurrent
publishers sharing 72 MiB stored 95% of the chunk bytes in more than one xorb, since none
can deduplicate against chunks the others have not registered yet. Cutting before each
chunk whose hash marks a boundary (on average every CUT_MODULUS chunks, about 16 MiB),
and before a file's first chunk once the xorb holds FILE_CUT_BYTES, realigns the streams
where they meet, so only the xorbs in which they diverge are stored twice, with no
coordination between publishers (benchmarks/concurrent_publishers.py: 264.6 MiB stored
at once and 79.4 in sequence before, 100.0 and 76.0 after, for 76 MiB of distinct bytes).
Smaller xorbs would realign sooner, but a global dedup hit returns one xorb's chunks, so
a publish after another would find less. Any cut rule gives valid xorbs (Xorb Format: up
to 64 MiB of chunks, in any grouping).

Both rules count bytes, not chunks: a tree of tiny files has a chunk per file, and counted
in chunks the rules made a xorb of 64 files (about 64 KiB) or of 256, each one more upload
and fsync, 15,600 xorbs for 1,000,000 files (the scale bench published 100,000 files 15%
slower); no cut before a xorb holds MIN_CUT_BYTES keeps them at 1 MiB or more.
"""

CUT_MODULUS = 256  # chunks between boundaries on average (chunks average 64 KiB)
MIN_CUT_BYTES = 1 << 20  # no cut before the xorb being built holds this many chunk bytes
FILE_CUT_BYTES = 4 << 20  # a file's first chunk starts a xorb already holding this many


def cuts_before(chunk_hash: bytes, bytes_in_xorb: int, first_in_file: bool) -> bool:
    """Should a new xorb start with this chunk, the xorb being built holding that many bytes?"""
    if first_in_file and bytes_in_xorb >= FILE_CUT_BYTES:
        return True  # a file shared after different ones ends its xorb alike too
    boundary = int.from_bytes(chunk_hash[:8], "little") % CUT_MODULUS == 0
    return boundary and bytes_in_xorb >= MIN_CUT_BYTES
