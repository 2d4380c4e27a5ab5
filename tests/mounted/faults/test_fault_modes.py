"""The mount behind a fault-injecting proxy (tests/support/faults.py) in front of a real
`arkfs serve`: for every fault mode, 0 wrong bytes, every read(2) bounded, and once the
fault ends a file the mount never read reads correctly without a remount.

Each case mounts afresh (its own cache directory), loads the archive, turns the fault on,
reads a.bin in 1 MiB preads (in a child, timing each read(2)), heals the proxy, and reads
b.bin. FINDINGS collects what each mode did, for the closing report (`pytest -s` prints
it at the end of the module).
"""

import concurrent.futures
import errno
import time
from pathlib import Path

import pytest

from tests.support.faults import Archive, Proxy, mount_through
from tests.support.mount import Mounted, timed_read

STUCK_BOUND = 30.0  # seconds a read(2) may take when the server stalls or trickles
DOWN_BOUND = 10.0  # ... when it cannot be reached, or answers nothing usable
HEALED_WITHIN = 10.0  # seconds after the fault ends by which a new file reads
FINDINGS: dict[str, str] = {}


def read_after_healing(archive: Archive, m: Mounted, scratch: Path) -> float:
    """Read b.bin (never read by this mount) until it reads whole; the seconds it took."""
    want = archive.files["b.bin"]
    start = time.monotonic()
    while True:
        got = timed_read(m.path / archive.ark / "b.bin", scratch)
        assert got.wrong_bytes(want) == 0
        if got.errno is None:
            assert sum(map(len, got.blocks.values())) == len(want)
            return time.monotonic() - start
        assert got.errno == errno.EIO, got.errno
        assert time.monotonic() - start < HEALED_WITHIN, "still failing after the fault ended"
        time.sleep(0.5)


# (mode, the requests it hits, how many of them (None: all), whether the read must succeed;
# None: it may fail with EIO or read right, as when the read needs no fetched footer)
CASES = {
    "5xx-burst": ("5xx", "any", 3, True),
    "5xx-forever": ("5xx", "any", None, False),
    "reset-once": ("reset", "xorb", 1, True),
    "reset-forever": ("reset", "any", None, False),
    "truncate-once": ("truncate", "xorb", 1, True),
    "truncate-forever": ("truncate", "xorb", None, False),
    "short-once": ("short", "xorb", 1, True),
    "short-forever": ("short", "xorb", None, False),
    "flip-xorb-once": ("flip", "xorb", 1, True),
    "flip-xorb-forever": ("flip", "xorb", None, False),
    "flip-footer-once": ("flip", "footer", 1, True),
    # a.bin's xorb holds it alone (xet/xorb_cuts.py), so its terms' ranges cover the whole
    # xorb, footer included: the flipped footer reply is refused and the read may be checked
    # from the ranges alone (a wrong byte still fails it: `wrong == 0` below)
    "flip-footer-forever": ("flip", "footer", None, None),
    "flip-reconstruction-once": ("flip", "reconstruction", 1, True),
    "flip-reconstruction-forever": ("flip", "reconstruction", None, False),
    "stall-head": ("stall-head", "xorb", None, False),
    "stall-body": ("stall-body", "xorb", None, False),
    "trickle": ("trickle", "xorb", None, False),
}
STUCK = {"stall-head", "stall-body", "trickle"}


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.slow) if CASES[c][0] in STUCK else c for c in CASES],
)
def test_fault_mode(case: str, archive: Archive, proxy: Proxy, tmp_path: Path) -> None:
    mode, kind, count, must_read = CASES[case]
    want = archive.files["a.bin"]
    with mount_through(proxy, tmp_path) as m:
        target = m.path / archive.ark / "a.bin"
        assert target.stat().st_size == len(want)  # the archive is loaded
        proxy.inject(mode, kind, count)
        got = timed_read(target, tmp_path)
        damaged = proxy.damaged
        proxy.heal()
        healed = read_after_healing(archive, m, tmp_path)
    wrong = got.wrong_bytes(want)
    FINDINGS[case] = (
        f"{damaged} requests damaged, errno {got.errno}, {wrong} wrong bytes, "
        f"longest read(2) {got.longest:.2f} s, new file read {healed:.1f} s after healing"
    )
    assert damaged > 0, "the fault never hit a request"
    assert wrong == 0
    if must_read:
        assert got.errno is None, f"{case}: a transient fault failed the read"
    elif must_read is None:
        assert got.errno in (None, errno.EIO), f"{case}: errno {got.errno}"
    else:
        assert got.errno == errno.EIO, f"{case}: errno {got.errno}"
    bound = STUCK_BOUND if mode in STUCK else DOWN_BOUND
    assert got.longest <= bound, f"{case}: a read(2) took {got.longest:.1f} s"


@pytest.mark.slow
@pytest.mark.parametrize("how", ["refuse", "blackhole"])
def test_unreachable_server(how: str, archive: Archive, proxy: Proxy, tmp_path: Path) -> None:
    """The server goes away (refused connections, or connects that hang): a read fails
    within DOWN_BOUND, the next one at once (the fail-fast window), and once the server is
    back a new file reads."""
    with mount_through(proxy, tmp_path) as m:
        target = m.path / archive.ark / "a.bin"
        assert target.stat().st_size == len(archive.files["a.bin"])
        proxy.down(how)
        got = timed_read(target, tmp_path)
        again = timed_read(target, tmp_path)
        proxy.up()
        healed = read_after_healing(archive, m, tmp_path)
    FINDINGS[f"unreachable-{how}"] = (
        f"errno {got.errno}, longest read(2) {got.longest:.2f} s, then "
        f"{again.longest:.2f} s; new file read {healed:.1f} s after it came back"
    )
    assert got.errno == again.errno == errno.EIO
    assert got.blocks == {} and again.blocks == {}
    assert got.longest <= DOWN_BOUND, f"a read(2) took {got.longest:.1f} s"
    assert again.longest < 1.0, "no fail-fast: a second read waited again"


@pytest.mark.slow
def test_trickle_under_parallel_readers_then_heal(
    archive: Archive, proxy: Proxy, tmp_path: Path
) -> None:
    """D2's repro: 10 parallel 64 KiB preads of a large file through a trickling proxy; once
    it heals, a file the mount never read reads."""
    big = archive.files["big.bin"]
    with mount_through(proxy, tmp_path) as m:
        path = m.path / archive.ark / "big.bin"
        assert path.stat().st_size == len(big)
        proxy.inject("trickle", "xorb")
        offsets = [i * 4 * (1 << 20) + 12345 for i in range(10)]
        with concurrent.futures.ThreadPoolExecutor(10) as pool:
            reads = list(pool.map(lambda at: timed_read(path, tmp_path, [at]), offsets))
        proxy.heal()
        healed = read_after_healing(archive, m, tmp_path)
    longest = max(r.longest for r in reads)
    FINDINGS["trickle-10-readers"] = (
        f"errnos {sorted({str(r.errno) for r in reads})}, longest read(2) {longest:.2f} s, "
        f"new file read {healed:.1f} s after healing"
    )
    assert all(r.wrong_bytes(big) == 0 for r in reads)
    assert longest <= STUCK_BOUND


def teardown_module() -> None:
    for case, finding in FINDINGS.items():
        print(f"\n{case}: {finding}", end="")
