"""ChunkMemory: chunks that are views of a shared buffer are bounded by that buffer's bytes."""

import random

import pytest

from arkfs.mount.data.chunk_memory import ChunkMemory

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

KIB = 1024


def fetched(n: int, size: int, seed: int) -> tuple[bytes, list[tuple[bytes, memoryview]]]:
    """A buffer of n chunks of size bytes, and (hash, view) of each, as a fetch gives them."""
    body = random.Random(seed).randbytes(n * size)
    view = memoryview(body)
    return body, [(bytes([seed, i]) * 16, view[i * size : (i + 1) * size]) for i in range(n)]


def test_views_of_one_buffer_weigh_it_once_and_go_with_it() -> None:
    memory = ChunkMemory(100 * KIB)
    body, chunks = fetched(4, 16 * KIB, seed=1)
    for h, c in chunks:
        memory.put(h, c)
    assert memory.total == len(body) and len(memory) == 4
    assert bytes(memory.get(chunks[2][0])) == body[32 * KIB : 48 * KIB]
    _, others = fetched(4, 16 * KIB, seed=2)  # 128 KiB in all: the older buffer goes
    for h, c in others:
        memory.put(h, c)
    assert memory.total == 64 * KIB and len(memory) == 4
    assert all(h not in memory for h, _ in chunks)
    assert memory.get(chunks[0][0]) == b""


def test_a_chunk_read_again_keeps_its_buffer_within_the_bound() -> None:
    """One chunk of each buffer read again, over and over: the buffers it keeps alive are
    counted whole, so the bytes held never pass the capacity (a bound on chunks alone
    would have let one 4 KiB chunk keep each 64 KiB fetch alive)."""
    memory = ChunkMemory(256 * KIB)
    held: dict[bytes, memoryview] = {}
    for seed in range(40):
        _, chunks = fetched(16, 4 * KIB, seed)
        for h, c in chunks:
            memory.put(h, c)
        first = chunks[0][0]
        held[first] = chunks[0][1]
        for h in held:
            memory.get(h)
        alive = {id(v.obj): v.obj for h, v in held.items() if h in memory}
        assert memory.total == sum(memoryview(o).nbytes for o in alive.values()) <= 256 * KIB
    assert 0 < sum(h in memory for h in held) <= 4


def test_peek_leaves_the_order_and_get_renews_it() -> None:
    memory = ChunkMemory(64 * KIB)
    _, a = fetched(2, 16 * KIB, seed=1)
    _, b = fetched(2, 16 * KIB, seed=2)
    for h, c in [*a, *b]:
        memory.put(h, c)
    memory.peek(a[0][0])
    _, third = fetched(1, 32 * KIB, seed=3)
    memory.put(*third[0])  # a is the oldest buffer still: it goes
    assert a[0][0] not in memory and b[0][0] in memory
    memory.get(b[1][0])
    _, fourth = fetched(1, 32 * KIB, seed=4)
    memory.put(*fourth[0])  # b was renewed: the third goes
    assert b[0][0] in memory and third[0][0] not in memory


def test_a_chunk_put_again_from_another_buffer_leaves_the_first() -> None:
    memory = ChunkMemory(1024 * KIB)
    _, a = fetched(2, 16 * KIB, seed=1)
    for h, c in a:
        memory.put(h, c)
    own = bytes(a[0][1])  # the same chunk, now its own bytes
    memory.put(a[0][0], own)
    assert memory.total == 32 * KIB + len(own)
    memory.put(a[1][0], bytes(a[1][1]))  # the first buffer keeps no chunk now: it goes
    assert memory.total == 32 * KIB and len(memory) == 2
    assert memory.get(a[0][0]) is own
