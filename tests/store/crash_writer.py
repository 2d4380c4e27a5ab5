"""Child process of the crash test: writes to a store forever, printing each acknowledgement.

Usage: python -m tests.store.crash_writer ROOT SEED. Prints "ready" once the store is open,
then "xorb H", "file H" and "ark A N H" lines, each flushed right after the put or bind
returned. Each file is bound to an ARK of its own and as a new version of SHARED, which
every run appends to.
"""

import random
import sys
import time

from arkfs.store.base import Binding
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from tests.store.factory import file_of, first_chunks, random_xorb, shard_blob

SHARED = "ark:99999/shared"


def main(root: str, seed: int) -> None:
    rng = random.Random(seed)
    store = LocalStore.open(root)
    print("ready", flush=True)
    for n in range(10**9):
        xorbs = [random_xorb(rng, rng.randint(1, 48), 32768) for _ in range(rng.randint(1, 3))]
        for x in xorbs:
            store.put_xorb(x.hash, x.data)
            print("xorb", hash_to_string(x.hash), flush=True)
        record = file_of(xorbs)
        store.put_shard(*shard_blob(rng), [record], first_chunks(xorbs))
        print("file", hash_to_string(record.file_hash), flush=True)
        for ark in (f"ark:99999/s{seed}n{n}", SHARED):
            erc = f"erc:\nwhat: run {seed} item {n}\n"
            version = store.bind(Binding(ark, record.file_hash, erc, time.time()))
            print("ark", ark, version, hash_to_string(record.file_hash), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
