"""Cold sequential read through the mount with the S3 + PostgreSQL store (SeaweedFS and
PostgreSQL 15 on this machine), against the same read from the embedded directory store."""

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from benchmarks.common import (
    ARKFS,
    SEQUENTIAL,
    Figure,
    arkfs_mount,
    arkfs_server,
    compare,
    drop_caches,
    interleaved,
    read_seconds,
    size_label,
    value,
)
from benchmarks.mountbench import BIG_ARK, READ_TOKEN, WRITE_TOKEN, Archive, Server
from tests.support.services import PostgreSQL, SeaweedFS, new_place, running


@contextmanager
def s3_server(archive: Archive, local: Path) -> Iterator[Server]:
    """An `arkfs serve` over a new bucket and database holding local as BIG_ARK."""
    with ExitStack() as stack:
        weed = stack.enter_context(running(SeaweedFS()))
        pg = stack.enter_context(running(PostgreSQL()))
        place = new_place(weed, pg)
        tree = archive.scratch / "s3-tree"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir()
        os.link(local, tree / local.name)
        server = stack.enter_context(
            arkfs_server(place.location, archive.scratch / "tokens", *place.serve_args()[2:])
        )
        started = time.perf_counter()
        subprocess.run(
            [ARKFS, "publish", str(tree), "--ark", BIG_ARK, "--server", server.url],
            env=os.environ | {"ARKFS_TOKEN": WRITE_TOKEN},
            check=True,
            stdout=subprocess.DEVNULL,
        )
        print(f"  published {BIG_ARK} to S3 in {time.perf_counter() - started:.0f} s", flush=True)
        yield server


def bench_s3_cold(archive: Archive, local: Path) -> list[Figure]:
    """Cold sequential read of local through a mount of the S3-backed server and of the
    embedded-store server, taking turns; and the xorb bytes the S3-backed server served."""
    size, label = local.stat().st_size, size_label(local)
    with s3_server(archive, local) as server:

        def read(on: Server, cache: str) -> dict[str, float]:
            drop_caches()
            shutil.rmtree(archive.scratch / cache, ignore_errors=True)
            with arkfs_mount(on.url, READ_TOKEN, archive.scratch / cache) as mount:
                path = mount.path / BIG_ARK / local.name
                if not path.exists():  # the embedded server holds it in its big-files ARK
                    path = archive.in_mount(mount, local)
                path.stat()
                return {"mbps": size / 1e6 / read_seconds(path)}

        got = interleaved(
            {
                "s3": lambda: read(server, "s3-cache"),
                "embedded": lambda: read(archive.server, "embedded-cache"),
            }
        )
        stats = server.stats(READ_TOKEN) or {}
    through = stats.get("xorb_bytes_served", 0) + stats.get("footer_bytes_served", 0)
    return [
        compare(
            f"cold sequential read, {label} random, S3 + PostgreSQL store",
            "MB/s",
            value(got["s3"], "mbps"),
            value(got["embedded"], "mbps"),
            "the same read from the embedded directory store",
            None,
            SEQUENTIAL,
            note=f"SeaweedFS on this machine; xorb bytes through arkfs serve: {through}",
        )
    ]
