"""When a plain object is read whole: a SHA-256 digest up to WHOLE_MAX means one block,
checked before any byte is served (the mount's side: tests/mounted/test_object_digest_first)."""

from dataclasses import replace

import pytest

from arkfs.resolver.objects import WHOLE, WHOLE_MAX, RemoteObject

MIB = 1 << 20


@pytest.mark.unit
def test_a_digest_up_to_whole_max_means_one_block_checked_whole() -> None:
    obj = RemoteObject("ark:b1/x", "http://h/x", 24 * MIB, '"e1"', bytes(32), None)
    assert obj.whole and obj.blocks == 1
    assert replace(obj, size=WHOLE_MAX).whole
    assert not replace(obj, size=WHOLE_MAX + 1).whole  # too big to hold: ranges, then the digest
    assert not replace(obj, sha256=None).whole and replace(obj, size=WHOLE).whole
