"""The trust chain, in one place: every other layer calls these two checks.

An ARK binding names a file hash. The file hash is the Merkle root of the file's chunk
hashes (File Hashes); the chunk hashes come from xorb footers, and each footer is checked
against the hash of the xorb it ends (Xorb Hashes, CasObjectInfo Footer). Every chunk's
bytes are then checked against their chunk hash (verify_chunk in xorb.py). So:

- named_footer: parse a footer, verify it, and check it names the xorb asked for
  (recorded_footer: the same for a footer_record, as the disk cache and servers keep them;
  check_named: the check alone, for a footer parsed earlier);
- verify_terms: check a file's terms against verified footers, its size and its hash.
"""

from array import array
from collections.abc import Mapping, Sequence

from arkfs.xet.errors import HashMismatchError, ReconstructionError
from arkfs.xet.hashing import hash_to_string, packed_file_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.xorb import XorbFooter, footer_tail, parse_footer


def named_footer(tail: bytes | memoryview, xorb_size: int, xorb_hash: bytes) -> XorbFooter:
    """The footer at the end of tail (the last bytes of a xorb of xorb_size bytes), verified
    against the hashes it lists and checked to be the footer of xorb_hash.

    Raises XorbFormatError if malformed, HashMismatchError if it fails its hash or names
    another xorb.
    """
    footer = parse_footer(tail, xorb_size)
    check_named(footer, xorb_hash)
    return footer


def check_named(footer: XorbFooter, xorb_hash: bytes) -> None:
    """Verify a parsed footer against the hashes it lists, and check it is xorb_hash's;
    raises HashMismatchError if not."""
    footer.verify()
    if footer.xorb_hash != xorb_hash:
        raise HashMismatchError(
            "xorb footer", hash_to_string(xorb_hash), hash_to_string(footer.xorb_hash)
        )


def recorded_footer(record: bytes | memoryview, xorb_hash: bytes) -> XorbFooter:
    """named_footer of a footer_record (xorb.py); raises as named_footer does."""
    tail, xorb_size = footer_tail(record)
    return named_footer(tail, xorb_size, xorb_hash)


def verify_terms(
    expected_hash: bytes, size: int, terms: Sequence[Term], footers: Mapping[bytes, XorbFooter]
) -> None:
    """Check a file's terms against the verified footers of their xorbs, its size and
    expected_hash: the chunks they name must hold size bytes and hash to expected_hash.

    footers must hold a footer for every xorb the terms name (KeyError otherwise).
    Raises ReconstructionError when a term or the size disagrees with the footers, and
    HashMismatchError when the chunks do not hash to expected_hash.
    """
    hashes: list[bytes] = []
    ends = array("Q")
    total = 0
    for n, t in enumerate(terms):
        footer = footers[t.xorb_hash]
        if not 0 <= t.start < t.end <= footer.num_chunks:
            raise ReconstructionError(
                f"term {n} covers chunks {t.start}..{t.end} of xorb "
                f"{hash_to_string(t.xorb_hash)}, which has {footer.num_chunks}"
            )
        ue = footer.unpacked_ends
        base = ue[t.start - 1] if t.start else 0
        held = ue[t.end - 1] - base
        if held != t.unpacked_length:
            raise ReconstructionError(
                f"term {n} claims {t.unpacked_length} bytes, its chunks hold {held}"
            )
        hashes.extend(footer.chunk_hashes[t.start : t.end])
        ends.extend(map((total - base).__add__, ue[t.start : t.end]))
        total += held
    if total != size:
        raise ReconstructionError(f"size {size}, but its terms hold {total} bytes")
    actual = packed_file_hash(b"".join(hashes), ends)
    if actual != expected_hash:
        raise HashMismatchError(
            "file (the chunks of its terms hash to another)",
            hash_to_string(expected_hash),
            hash_to_string(actual),
        )
