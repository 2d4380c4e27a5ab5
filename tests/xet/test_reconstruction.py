"""Reconstruction replies (v1 and v2 shapes) and range planning."""

from dataclasses import replace

import msgpack
import pytest

from arkfs.xet.errors import ReconstructionError
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import (
    FOOTERS_FIELD,
    FetchRange,
    Reconstruction,
    Term,
    batch_to_json,
    parse_batch,
    plan_range,
)

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

X1, X2 = bytes([1]) * 32, bytes([2]) * 32
SIZES = {X1: [100, 200, 300, 400], X2: [50, 50, 50]}
# A file of X1 chunks 1..4 (900 bytes) then X2 chunks 0..3 (150 bytes).
TERMS = [Term(X1, 1, 4, 900), Term(X2, 0, 3, 150)]


def plan(start: int, end: int) -> tuple[list[Term], int]:
    return plan_range(TERMS, SIZES.__getitem__, start, end)


def test_whole_file() -> None:
    assert plan(0, 1050) == (TERMS, 0)


def test_range_trimmed_to_chunks() -> None:
    # Bytes 250..260 lie in X1 chunk 2 (file bytes 200..500).
    assert plan(250, 260) == ([Term(X1, 2, 3, 300)], 50)
    # Bytes 899..901 span the last X1 chunk and the first X2 chunk.
    assert plan(899, 901) == ([Term(X1, 3, 4, 400), Term(X2, 0, 1, 50)], 399)
    # Starting on a chunk boundary gives offset 0.
    assert plan(900, 1050) == ([Term(X2, 0, 3, 150)], 0)


def test_range_past_end_and_empty() -> None:
    with pytest.raises(ReconstructionError, match="past the end"):
        plan(1050, 2000)
    with pytest.raises(ReconstructionError, match="empty"):
        plan(5, 5)


def rec() -> Reconstruction:
    fetch = {
        X1: (FetchRange("http://h/x1?sig=1", 1, 4, 108, 1099),),
        X2: (
            FetchRange("http://h/x2?sig=2", 0, 2, 0, 115),
            FetchRange("http://h/x2", 2, 3, 116, 173),
        ),
    }
    return Reconstruction((Term(X1, 1, 4, 900), Term(X2, 0, 2, 100), Term(X2, 2, 3, 50)), 7, fetch)


def test_v1_and_v2_round_trip() -> None:
    r = rec()
    assert Reconstruction.from_json(r.to_v1()) == r
    assert Reconstruction.from_json(r.to_v2()) == r
    v2 = r.to_v2()
    assert v2["xorbs"][hash_to_string(X2)][0]["ranges"][0] == {
        "chunks": {"start": 0, "end": 2},
        "bytes": {"start": 0, "end": 115},
    }
    assert r.fetch_for(Term(X2, 2, 3, 50)).url == "http://h/x2"


def test_footers_ride_along_only_when_present() -> None:
    r = replace(rec(), footers={X1: b"footer of x1", X2: b"\x00\xff"})
    for body in (r.to_v1(), r.to_v2()):
        assert body[FOOTERS_FIELD][hash_to_string(X2)] == "AP8="
        assert Reconstruction.from_json(body) == r
    assert FOOTERS_FIELD not in rec().to_v1() and FOOTERS_FIELD not in rec().to_v2()


def test_the_binary_form_carries_footers_as_bytes() -> None:
    r = replace(rec(), footers={X1: b"footer of x1", X2: b"\x00\xff"})
    for body in (r.to_v1(binary=True), r.to_v2(binary=True)):
        assert body[FOOTERS_FIELD][hash_to_string(X2)] == b"\x00\xff"
        sent = msgpack.unpackb(msgpack.packb(body, use_bin_type=True), raw=False)
        assert Reconstruction.from_json(sent) == r
    assert r.to_v1(binary=True)["terms"] == r.to_v1()["terms"]


@pytest.mark.parametrize("key", [b"0" * 64, 7])
def test_a_binary_reply_with_a_key_that_is_no_string_is_refused(key: object) -> None:
    body = rec().to_v1(binary=True)
    body[FOOTERS_FIELD] = {key: b"footer"}
    with pytest.raises(ReconstructionError, match=r"not (bytes|int)"):
        Reconstruction.from_json(body)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda j: j.__setitem__(FOOTERS_FIELD, {hash_to_string(X1): "not base64!"}),
        lambda j: j.__setitem__(FOOTERS_FIELD, {hash_to_string(X1): "AP8é"}),
        lambda j: j.__setitem__(FOOTERS_FIELD, {hash_to_string(X1): "AP8=\n"}),
        lambda j: j.__setitem__(FOOTERS_FIELD, {hash_to_string(X1): "AP8"}),
        lambda j: j.__setitem__(FOOTERS_FIELD, {hash_to_string(X1): 5}),
        lambda j: j.__setitem__(FOOTERS_FIELD, {"zz": "AP8="}),
        lambda j: j.__setitem__(FOOTERS_FIELD, ["AP8="]),
        lambda j: j.pop("terms"),
        lambda j: j.__setitem__("offset_into_first_range", -1),
        lambda j: j.__setitem__("offset_into_first_range", 900),
        lambda j: j["terms"][0].__setitem__("hash", "zz"),
        lambda j: j["terms"][0]["range"].__setitem__("end", 1),
        lambda j: j["terms"][0].__setitem__("unpacked_length", "9"),
        lambda j: j["fetch_info"].pop(hash_to_string(X1)),
        lambda j: j["fetch_info"][hash_to_string(X2)][0]["url_range"].__setitem__("end", -3),
        lambda j: j["fetch_info"][hash_to_string(X2)][0].__setitem__("url", 5),
    ],
)
def test_malformed_replies(mutate) -> None:
    j = rec().to_v1()
    mutate(j)
    with pytest.raises(ReconstructionError):
        Reconstruction.from_json(j)


def test_not_an_object() -> None:
    with pytest.raises(ReconstructionError):
        Reconstruction.from_json([1, 2])


# Two whole files of a batch: F1 of X1 and X2 (with footers), F2 of X2 alone.
F1, F2 = bytes([0xF1]) * 32, bytes([0xF2]) * 32


def batch() -> dict[bytes, Reconstruction]:
    x1 = (FetchRange("http://h/x1", 1, 4, 10, 610),)
    x2 = (FetchRange("http://h/x2", 0, 3, 0, 173),)
    one = Reconstruction(
        (Term(X1, 1, 4, 900), Term(X2, 0, 3, 150)), 0, {X1: x1, X2: x2}, {X1: b"f1", X2: b"f2"}
    )
    two = Reconstruction((Term(X2, 0, 2, 100),), 0, {X2: x2}, {X2: b"f2"})
    return {F1: one, F2: two}


@pytest.mark.parametrize("binary", [False, True])
def test_a_batch_round_trips_each_file_with_its_own_xorbs(binary: bool) -> None:
    body = batch_to_json(batch(), binary)
    assert sorted(body) == ["arkfs_footers", "fetch_info", "files"]  # xet-core's shape, plus ours
    assert len(body["fetch_info"][hash_to_string(X2)]) == 1  # one range, not one per file
    sent = msgpack.unpackb(msgpack.packb(body, use_bin_type=True), raw=False)
    assert parse_batch(sent) == batch()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda j: j.pop("files"),
        lambda j: j.__setitem__("files", [1]),
        lambda j: j["files"].__setitem__("zz", []),
        lambda j: j["files"].__setitem__(hash_to_string(F2), {"terms": []}),
        lambda j: j["files"][hash_to_string(F1)][0].__setitem__("unpacked_length", 0),
        lambda j: j["fetch_info"].pop(hash_to_string(X1)),  # F1's first term is not covered
        lambda j: j.__setitem__(FOOTERS_FIELD, {hash_to_string(X1): 5}),
    ],
)
def test_a_malformed_batch_is_refused(mutate) -> None:
    j = batch_to_json(batch())
    mutate(j)
    with pytest.raises(ReconstructionError):
        parse_batch(j)
