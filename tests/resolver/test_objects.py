"""RemoteObject: how an object is cut into blocks, what names a block, which objects may
keep blocks on disk, and its record's JSON form."""

import hashlib
from dataclasses import replace

import pytest

from arkfs.resolver.objects import BLOCK, WHOLE, RemoteObject

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

MIB = 1024 * 1024
BIG = RemoteObject("ark:b1/x", "http://h/x", 24 * MIB + 1, '"e1"', bytes(32), "erc:")


def test_a_small_object_is_one_block_and_a_big_one_block_sized_ranges() -> None:
    small = replace(BIG, size=WHOLE)
    assert small.blocks == 1 and small.block_span(0) == (0, WHOLE)
    assert small.block_of(WHOLE - 1) == 0
    ranged = replace(BIG, sha256=None)  # with its digest it is read whole (test_digest_first)
    assert ranged.blocks == 7
    assert ranged.block_span(6) == (6 * BLOCK, 24 * MIB + 1)
    assert ranged.block_of(BLOCK) == 1


def test_without_a_strong_etag_an_object_is_one_block_read_whole() -> None:
    for etag in (None, 'W/"weak"'):
        weak = replace(BIG, etag=etag)
        assert weak.whole and weak.blocks == 1
        assert weak.block_span(0) == (0, BIG.size) and weak.block_of(BIG.size - 1) == 0


def test_another_version_never_shares_a_block_id() -> None:
    ids = {
        BIG.block_id(0),
        BIG.block_id(1),
        replace(BIG, etag='"e2"').block_id(0),
        replace(BIG, sha256=hashlib.sha256(b"x").digest()).block_id(0),
        replace(BIG, url="http://h/y").block_id(0),
        replace(BIG, size=BIG.size + 1).block_id(0),
    }
    assert len(ids) == 6
    assert len(BIG.block_id(0)) == 32


def test_only_blocks_tied_to_one_version_may_go_to_disk() -> None:
    assert BIG.on_disk
    assert not replace(BIG, etag='W/"weak"', sha256=None).on_disk
    assert replace(BIG, etag=None).on_disk  # no strong ETag: one block, checked whole
    assert replace(BIG, etag=None, size=100).on_disk  # one block, checked whole
    assert not replace(BIG, etag=None, sha256=None, size=100).on_disk


def test_the_record_round_trips_through_json() -> None:
    assert RemoteObject.from_json(BIG.to_json()) == BIG
    bare = replace(BIG, etag=None, sha256=None, info=None)
    assert RemoteObject.from_json(bare.to_json()) == bare
    dated = replace(BIG, modified="Tue, 01 Oct 2024 10:00:00 GMT")
    assert RemoteObject.from_json(dated.to_json()) == dated
    older = {k: v for k, v in BIG.to_json().items() if k != "modified"}  # records cached before
    assert RemoteObject.from_json(older) == BIG
