"""Damage made the way each backend can suffer it, for the check tests of both."""

from arkfs.store.base import Store
from arkfs.store.local import LocalStore
from arkfs.store.scaled import XORBS, ScaledStore
from arkfs.xet.hashing import hash_to_string


def flip_xorb_byte(store: Store, h: bytes, offset: int) -> None:
    """Flip one bit of stored xorb h at offset, behind the store's back."""
    name = hash_to_string(h)
    if isinstance(store, LocalStore):
        path = store.root / "xorbs" / name[:2] / name
        data = bytearray(path.read_bytes())
        data[offset] ^= 1
        path.write_bytes(bytes(data))
        return
    assert isinstance(store, ScaledStore)
    key = store.bucket.key(XORBS, name)
    data = bytearray(store.bucket.get(key))
    data[offset] ^= 1
    store.bucket.put(key, bytes(data))


def remove_xorb(store: Store, h: bytes) -> None:
    """Remove stored xorb h behind the store's back (its rows stay)."""
    name = hash_to_string(h)
    if isinstance(store, LocalStore):
        (store.root / "xorbs" / name[:2] / name).unlink()
        return
    assert isinstance(store, ScaledStore)
    store.bucket.delete(store.bucket.key(XORBS, name))
