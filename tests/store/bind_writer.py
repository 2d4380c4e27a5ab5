"""Child process of the concurrent bind test: binds versions of one ARK once told to go.

Usage: python -m tests.store.bind_writer ROOT ARK NAME COUNT. Prints "ready" once the store
is open, waits for a line on stdin, then binds COUNT versions with messages "NAME i" and
prints the number each bind returned.
"""

import sys

from arkfs.store.base import Binding
from arkfs.store.local import LocalStore


def main(root: str, ark: str, name: str, count: int) -> None:
    with LocalStore.open(root) as store:
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(count):
            number = store.bind(Binding(ark, b"", "erc:\n", 0.0, message=f"{name} {i}"))
            print(number, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
