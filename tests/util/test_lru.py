"""The weighted LRU: order, weights, eviction, keep_one, against a plain model."""

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import arkfs.util
from arkfs.util.lru import LRU

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_get_touches_and_peek_does_not() -> None:
    lru: LRU[str, int] = LRU(3)
    for k in "abc":
        lru.put(k, ord(k))
    assert lru.get("a") == ord("a")
    assert list(lru) == ["b", "c", "a"]
    assert lru.peek("b") == ord("b")
    assert list(lru) == ["b", "c", "a"]
    assert lru.get("zz") is None and lru.peek("zz", -1) == -1
    assert lru.put("d", 4) == [("b", ord("b"))]
    assert list(lru.items()) == [("c", ord("c")), ("a", ord("a")), ("d", 4)]


def test_weights_evict_the_oldest_beyond_capacity() -> None:
    lru: LRU[str, bytes] = LRU(10)
    assert lru.put("a", b"a", 6) == []
    assert lru.put("b", b"b", 3) == []
    assert lru.total == 9 and len(lru) == 2
    assert lru.put("c", b"c", 4) == [("a", b"a")]
    assert lru.total == 7 and lru.weight("c") == 4
    assert lru.put("b", b"B", 8) == [("c", b"c")]  # a new weight for b; b is the newest
    assert list(lru.items()) == [("b", b"B")] and lru.total == 8


def test_an_item_heavier_than_capacity() -> None:
    plain: LRU[str, int] = LRU(5)
    plain.put("a", 1, 2)
    assert plain.put("big", 2, 9) == [("a", 1), ("big", 2)]
    assert len(plain) == 0 and plain.total == 0
    kept: LRU[str, int] = LRU(5, keep_one=True)
    kept.put("a", 1, 2)
    assert kept.put("big", 2, 9) == [("a", 1)]
    assert list(kept) == ["big"] and kept.total == 9
    assert kept.put("next", 3, 1) == [("big", 2)]


def test_pop_and_clear() -> None:
    lru: LRU[int, str] = LRU(100)
    for i in range(5):
        lru.put(i, str(i), i)
    assert lru.pop(3) == "3" and 3 not in lru and lru.total == 7
    assert lru.pop(3) is None and lru.pop(3, "gone") == "gone"
    lru.clear()
    assert len(lru) == 0 and lru.total == 0 and list(lru) == []


ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 9), st.integers(0, 7)),
        st.tuples(st.just("get"), st.integers(0, 9), st.just(0)),
        st.tuples(st.just("peek"), st.integers(0, 9), st.just(0)),
        st.tuples(st.just("pop"), st.integers(0, 9), st.just(0)),
    ),
    max_size=60,
)


@given(ops, st.integers(0, 20), st.booleans())
def test_matches_a_list_model(steps: list[tuple[str, int, int]], capacity: int, keep: bool) -> None:
    lru: LRU[int, int] = LRU(capacity, keep_one=keep)
    model: list[tuple[int, int, int]] = []  # (key, value, weight), oldest first
    for n, (op, key, weight) in enumerate(steps):
        found = next((item for item in model if item[0] == key), None)
        if op == "put":
            if found:
                model.remove(found)
            model.append((key, n, weight))
            expected = []
            while sum(w for _, _, w in model) > capacity and len(model) > (1 if keep else 0):
                k, v, _ = model.pop(0)
                expected.append((k, v))
            assert lru.put(key, n, weight) == expected
        elif op == "get":
            assert lru.get(key) == (found[1] if found else None)
            if found:
                model.remove(found)
                model.append(found)
        elif op == "peek":
            assert lru.peek(key) == (found[1] if found else None)
        else:
            assert lru.pop(key) == (found[1] if found else None)
            if found:
                model.remove(found)
        assert list(lru.items()) == [(k, v) for k, v, _ in model]
        assert lru.total == sum(w for _, _, w in model) and len(lru) == len(model)


def test_util_imports_nothing_from_arkfs() -> None:
    """arkfs.util is the bottom layer: every other layer may use it, it uses none (its own
    modules only)."""
    for path in Path(arkfs.util.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            outside = [n for n in names if n == "arkfs" or n.startswith("arkfs.")]
            assert all(n.startswith("arkfs.util.") for n in outside), path
