"""Fixtures of the fault suite: one archive published to a real `arkfs serve` for the
session, and a fault-injecting proxy in front of it for each test."""

import random
from collections.abc import Iterator

import pytest

from tests.support.archive import publish
from tests.support.faults import Archive, Proxy, fault_proxy
from tests.support.server import Server

MIB = 1 << 20


@pytest.fixture(scope="session")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Archive]:
    """Two 6 MiB files (a.bin, b.bin) and a 72 MiB one (big.bin: more than the mount keeps
    in memory), all random."""
    root = tmp_path_factory.mktemp("faults")
    (root / "tokens").write_text("writer write\n")
    files = {name: random.Random(name).randbytes(6 * MIB + 4321) for name in ("a.bin", "b.bin")}
    files["big.bin"] = random.Random("big").randbytes(72 * MIB)
    tree = root / "tree"
    tree.mkdir()
    for name, data in files.items():
        (tree / name).write_bytes(data)
    ark = "ark:12345/x6faults"
    with Server(root / "store", "--open-read", "--tokens", str(root / "tokens")) as server:
        publish(tree, ark, "--server", server.url, "--token", "writer")
        yield Archive(server, ark, files)


@pytest.fixture
def proxy(archive: Archive) -> Iterator[Proxy]:
    with fault_proxy(archive.server.url) as p:
        yield p
