"""Shard intake under load on S3 + PostgreSQL (issue 28): in each of ROUNDS rounds the four
shapes whose intake once outlasted the client (tests/support/intake_shapes.py, 2.5 GiB in
5 files among them) are published at once to an `arkfs serve` of that round, each with
new bytes. Run on request only (ARKFS_BENCH_ONLY=intake): 25 GiB pass
through the server, about a quarter of an hour.
"""

import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

from benchmarks.common import ARKFS, INGEST, MIB, Figure, arkfs_server
from tests.support.intake_shapes import SHAPES
from tests.support.services import PostgreSQL, SeaweedFS, new_place, running

ROUNDS = 10
WRITE = "bench-write"
TIMEOUT = 1800  # seconds one publish may take before it counts as failed
_SHARD_SECONDS = re.compile(
    r'^arkfs_http_request_duration_seconds_(sum|count)\{route="/v1/shards"\} (\S+)$', re.M
)


def _shard_posts(url: str) -> tuple[float, int]:
    """Seconds spent answering shard POSTs so far, and how many there were."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=60) as reply:
        found = dict(_SHARD_SECONDS.findall(reply.read().decode()))
    return float(found.get("sum", 0)), int(float(found.get("count", 0)))


def _round(
    scratch: Path, url: str, salt: int, seconds: dict[str, list[float]], failures: dict[str, str]
) -> None:
    """Publish every shape at once, as round salt; note each one's seconds or failure."""
    started = []
    for shape in SHAPES:
        tree = scratch / f"{shape.__name__}-{salt}"
        tree.mkdir()
        shape(tree, salt)
        ark = f"ark:99999/intake-{shape.__name__}"
        proc = subprocess.Popen(
            [ARKFS, "publish", str(tree), "--ark", ark, "--server", url, "-q"],
            env=os.environ | {"ARKFS_TOKEN": WRITE},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append((shape.__name__, tree, proc, time.perf_counter()))
    for name, tree, proc, start in started:
        try:
            _, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            err = f"no answer in {TIMEOUT} s"
        if proc.returncode == 0:
            seconds[name].append(time.perf_counter() - start)
        else:
            failures.setdefault(name, (err.strip().splitlines() or [""])[-1])
        shutil.rmtree(tree)


def bench_intake(workdir: Path) -> list[Figure]:
    """Publishes that succeeded per shape, their times, and the server's shard POST time."""
    scratch = Path(tempfile.mkdtemp(prefix="intake-", dir=workdir))
    seconds: dict[str, list[float]] = {shape.__name__: [] for shape in SHAPES}
    failures: dict[str, str] = {}
    post_sum, post_count, rss = 0.0, 0, 0.0
    try:
        tokens = scratch / "tokens"
        tokens.write_text(f"{WRITE} write\n")
        for salt in range(ROUNDS):
            # A new bucket, database and server each round: SeaweedFS here holds 16 GiB
            # (-volume.max=64 of 256 MB), less than ten rounds' 27 GiB.
            with ExitStack() as stack:
                place = new_place(
                    stack.enter_context(running(SeaweedFS())),
                    stack.enter_context(running(PostgreSQL())),
                )
                server = stack.enter_context(
                    arkfs_server(place.location, tokens, *place.serve_args()[2:], "--open-read")
                )
                before = sum(map(len, seconds.values()))
                _round(scratch, server.url, salt, seconds, failures)
                round_sum, round_count = _shard_posts(server.url)
                post_sum, post_count = post_sum + round_sum, post_count + round_count
                rss = max(rss, server.peak_rss() / MIB)
            published = sum(map(len, seconds.values())) - before
            print(f"  round {salt + 1}/{ROUNDS}: {published}/{len(SHAPES)} published", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    figures = [
        Figure(
            f"shard intake under load, {name}: publishes that succeeded, of {ROUNDS}",
            "publishes",
            float(len(times)),
            None,
            "",
            f">= {ROUNDS}",
            INGEST,
            error=failures.get(name),
            note=f"publish {statistics.median(times):.1f} s median, {max(times):.1f} s max"
            if times
            else "",
        )
        for name, times in seconds.items()
    ]
    mean = post_sum / post_count if post_count else 0.0
    figures.append(
        Figure("shard intake under load: mean shard POST", "s", mean, None, "", None, INGEST)
    )
    figures.append(
        Figure("shard intake under load: server peak RSS", "MiB", rss, None, "", None, INGEST)
    )
    return figures
