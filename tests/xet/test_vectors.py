"""The test vectors of the XET spec's appendix ("Test Vectors")."""

import pytest

from arkfs.xet.hashing import (
    chunk_hash,
    hash_to_string,
    merged_hash,
    string_to_hash,
    verification_hash,
)

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_chunk_hash_vector() -> None:
    h = chunk_hash(b"Hello World!")
    assert h.hex() == "a29cfb08e608d4d8726dd8659a90b9134b3240d5d8e42d5fcb28e2a6e763a3e8"
    assert hash_to_string(h) == "d8d408e608fb9ca213b9909a65d86d725f2de4d8d540324be8a363e7a6e228cb"


def test_hash_string_conversion_vector() -> None:
    raw = bytes(range(32))
    s = "07060504030201000f0e0d0c0b0a090817161514131211101f1e1d1c1b1a1918"
    assert hash_to_string(raw) == s
    assert string_to_hash(s) == raw


def test_internal_node_hash_vector() -> None:
    children = [
        (string_to_hash("c28f58387a60d4aa200c311cda7c7f77f686614864f5869eadebf765d0a14a69"), 100),
        (string_to_hash("6e4e3263e073ce2c0e78cc770c361e2778db3b054b98ab65e277fc084fa70f22"), 200),
    ]
    h, size = merged_hash(children)
    assert size == 300
    assert hash_to_string(h) == "be64c7003ccd3cf4357364750e04c9592b3c36705dee76a71590c011766b6c14"


def test_verification_range_hash_vector() -> None:
    hashes = [
        bytes.fromhex("aad4607a38588fc2777f7cda1c310c209e86f564486186f6694aa1d065f7ebad"),
        bytes.fromhex("2cce73e063324e6e271e360c77cc780e65ab984b053bdb78220fa74f08fc77e2"),
    ]
    expected = "eb06a8ad81d588ac05d1d9a079232d9c1e7d0b07232fa58091caa7bf333a2768"
    assert hash_to_string(verification_hash(hashes)) == expected
