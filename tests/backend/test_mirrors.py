"""MirroredBackend's choices, on trio's virtual clock: hedging, failover, which error wins,
bad mirrors asked last, and mirrors that disagree on an archive version."""

import logging
import random
from collections.abc import Awaitable, Callable, Collection
from dataclasses import replace
from typing import Any

import pytest
import trio
import trio.testing

from arkfs.archive.manifest import Entry, Kind, Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.erc import Erc
from arkfs.backend.base import BadReply, NotBound, Refused, Unreachable
from arkfs.backend.mirrors import HEDGE_AFTER, PROBE_AFTER, MirroredBackend
from arkfs.xet.reconstruction import Reconstruction
from tests.mount.data.fake_backend import FETCH, RECONSTRUCTION, FakeBackend

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


class Mirror(FakeBackend):
    """A backend whose versions(), archive() and list_archives() do what the test says."""

    def __init__(self, name: str, answer: Callable[[], Awaitable[Any]]) -> None:
        super().__init__({})
        self.name = name
        self.answer = answer
        self.asked = 0
        self.cancelled = False

    async def _answer(self) -> Any:
        self.asked += 1
        try:
            return await self.answer()
        except trio.Cancelled:
            self.cancelled = True
            raise

    async def versions(self, ark: str) -> list[VersionInfo]:
        return await self._answer()

    async def archive(self, ark: str, version: int | None = None) -> Archive:
        return await self._answer()

    async def list_archives(self, prefix: str = "") -> list[str]:
        return await self._answer()


def run(fn: Callable[[], Awaitable[Any]]) -> Any:
    return trio.run(fn, clock=trio.testing.MockClock(autojump_threshold=0))


def value(v: Any) -> Callable[[], Awaitable[Any]]:
    async def answer() -> Any:
        return v

    return answer


def error(exc: Exception) -> Callable[[], Awaitable[Any]]:
    async def answer() -> Any:
        raise exc

    return answer


async def forever() -> Any:
    await trio.sleep_forever()


def test_a_stuck_mirror_is_hedged_and_cancelled() -> None:
    stuck, fast = Mirror("stuck", forever), Mirror("fast", value(["v1"]))
    mirrors = MirroredBackend([stuck, fast])

    async def main() -> None:
        start = trio.current_time()
        assert await mirrors.versions("ark:1/x") == ["v1"]
        assert trio.current_time() - start == pytest.approx(HEDGE_AFTER)  # virtual time

    run(main)
    assert stuck.cancelled and fast.asked == 1


def test_a_failing_mirror_fails_over_at_once_and_is_asked_last_after() -> None:
    down, up = Mirror("down", error(Unreachable("gone"))), Mirror("up", value(["v1"]))
    mirrors = MirroredBackend([down, up])

    async def main() -> None:
        start = trio.current_time()
        assert await mirrors.versions("ark:1/x") == ["v1"]
        assert trio.current_time() == start  # no hedge wait: it failed first
        assert await mirrors.versions("ark:1/x") == ["v1"]

    run(main)
    assert down.asked == 1 and up.asked == 2  # the second call asked `up` first


def test_a_mirror_asked_last_is_never_a_hedge_for_a_slow_one() -> None:
    """A mirror that sent a bad reply is asked only once the one before it failed: a
    healthy mirror slower than HEDGE_AFTER is waited for, not hedged with it."""

    async def slow() -> Any:
        await trio.sleep(3 * HEDGE_AFTER)
        return ["v1"]

    liar, good = Mirror("liar", error(BadReply("garbled"))), Mirror("good", slow)
    mirrors = MirroredBackend([liar, good])

    async def main() -> None:
        assert await mirrors.versions("ark:1/x") == ["v1"]  # the liar first, then marked
        start = trio.current_time()
        assert await mirrors.versions("ark:1/x") == ["v1"]
        assert trio.current_time() - start == pytest.approx(3 * HEDGE_AFTER)

    run(main)
    assert liar.asked == 1 and good.asked == 2


@pytest.mark.parametrize(
    ("errors", "raised"),
    [
        ((NotBound("a"), NotBound("b")), NotBound),
        ((NotBound("a"), Unreachable("b")), Unreachable),
        ((Unreachable("a"), Refused("b")), Refused),
    ],
)
def test_notbound_only_when_every_mirror_says_so(
    errors: tuple[Exception, Exception], raised: type[Exception]
) -> None:
    mirrors = MirroredBackend([Mirror(str(i), error(e)) for i, e in enumerate(errors)])
    with pytest.raises(raised):
        run(lambda: mirrors.versions("ark:1/x"))


def archive(xet_hash: bytes) -> Archive:
    entry = Entry("f.txt", Kind.FILE, 1, 0o644, 0, xet_hash=xet_hash, sha256=bytes(32))
    manifest = Manifest(ark="ark:12345/x6", entries=(entry,))
    info = VersionInfo("ark:12345/x6", 1, 0.0, "", None, 1, 1)
    return Archive(manifest, Erc(who="w", what="t", when="2024"), info)


def test_mirrors_that_disagree_on_a_files_hash_are_an_error() -> None:
    same = MirroredBackend(
        [Mirror("a", value(archive(b"1" * 32))), Mirror("b", value(archive(b"1" * 32)))]
    )
    other = MirroredBackend(
        [Mirror("a", value(archive(b"1" * 32))), Mirror("b", value(archive(b"2" * 32)))]
    )
    assert run(lambda: same.archive("ark:12345/x6", 1)).version.version == 1
    with pytest.raises(BadReply, match="mirrors disagree on the files of ark:12345/x6 version 1"):
        run(lambda: other.archive("ark:12345/x6", 1))


class NamedFake(FakeBackend):
    """A FakeBackend whose URLs name it, as two servers' URLs differ by host."""

    def __init__(self, name: str, files: dict[str, bytes]) -> None:
        super().__init__(files)
        self.name = name

    async def reconstruction(
        self, file_hash: bytes, start: int, end: int, held: Collection[bytes] = ()
    ) -> Reconstruction:
        rec = await super().reconstruction(file_hash, start, end, held)
        fetch = {
            xh: tuple(replace(fr, url=fr.url.replace("fake://", f"{self.name}://")) for fr in frs)
            for xh, frs in rec.fetch.items()
        }
        return replace(rec, fetch=fetch)


FILES = {"data": random.Random(11).randbytes(3 << 20)}


def test_xorbs_are_spread_over_mirrors_and_expired_urls_renewed() -> None:
    a, b = NamedFake("a", FILES), NamedFake("b", FILES)
    mirrors = MirroredBackend([a, b])
    file = a.files["data"]

    async def main() -> None:
        rec = await mirrors.reconstruction(file.hash, 0, file.size)
        for expire in (False, True):
            if expire:
                a.expire_urls()
                b.expire_urls()
            for xh, frs in rec.fetch.items():
                fr = frs[0]
                got = await mirrors.fetch(xh, fr)
                assert got == a.xorbs[xh].data[fr.byte_start : fr.byte_end + 1]

    run(main)
    assert len(file.xorbs) > 1 and a.calls[FETCH] and b.calls[FETCH]  # spread over both


def test_a_blamed_mirror_is_asked_last() -> None:
    a, b = NamedFake("a", FILES), NamedFake("b", FILES)
    mirrors = MirroredBackend([a, b])
    file = a.files["data"]

    async def main() -> None:
        rec = await mirrors.reconstruction(file.hash, 0, file.size)
        xh, frs = next(iter(rec.fetch.items()))
        await mirrors.fetch(xh, frs[0])
        served = a if a.calls[FETCH] else b
        other = b if served is a else a
        mirrors.blame(xh, "a chunk failed its hash")
        await mirrors.fetch(xh, frs[0])
        assert served.calls[FETCH] == 1 and other.calls[FETCH] == 1

    run(main)


def test_a_slow_mirror_is_asked_last_and_probed_again(caplog: pytest.LogCaptureFixture) -> None:
    """#23 item 10: a mirror much slower than the others (not so slow that hedging helps)
    kept its turn. Now it is asked after them, named once, and asked again after
    PROBE_AFTER: if it answers fast then, it has its turn back."""
    delay = {"slow": 1.0, "fast": 0.01}

    def timed(name: str) -> Callable[[], Awaitable[Any]]:
        async def answer() -> Any:
            await trio.sleep(delay[name])
            return ["v1"]

        return answer

    slow, fast = Mirror("slow", timed("slow")), Mirror("fast", timed("fast"))
    mirrors = MirroredBackend([slow, fast])

    async def main() -> None:
        for _ in range(10):
            await mirrors.versions("ark:1/x")
        assert (slow.asked, fast.asked) == (1, 9)  # measured once, then asked last
        await trio.sleep(PROBE_AFTER)
        for _ in range(3):
            await mirrors.versions("ark:1/x")
        assert (slow.asked, fast.asked) == (2, 11)  # probed once, still slow
        delay["slow"] = 0.01  # it recovers
        await trio.sleep(PROBE_AFTER)
        for _ in range(3):
            await mirrors.versions("ark:1/x")
        assert (slow.asked, fast.asked) == (5, 11)  # listed first, and fast again

    with caplog.at_level(logging.INFO, logger="arkfs.backend.mirrors"):
        run(main)
    named = [r.getMessage() for r in caplog.records if "mirror slow is" in r.getMessage()]
    assert len(named) == 2 and "is slow" in named[0] and "no longer slow" in named[1], named


def test_a_mirror_whose_reconstruction_fails_verification_is_named_and_asked_last(
    caplog: pytest.LogCaptureFixture,
) -> None:
    a, b = NamedFake("a", FILES), NamedFake("b", FILES)
    mirrors = MirroredBackend([a, b])
    file = a.files["data"]

    async def main() -> None:
        await mirrors.reconstruction(file.hash, 0, file.size)
        liar = a if a.calls[RECONSTRUCTION] else b
        honest = b if liar is a else a
        mirrors.blame_reconstruction(file.hash, "its terms hash to another file")
        for _ in range(4):
            await mirrors.reconstruction(file.hash, 0, file.size)
        assert liar.calls[RECONSTRUCTION] == 1 and honest.calls[RECONSTRUCTION] == 4
        named = [r.getMessage() for r in caplog.records if f"mirror {liar.name} " in r.getMessage()]
        assert len(named) == 1 and "reconstruction that fails verification" in named[0]

    with caplog.at_level(logging.WARNING, logger="arkfs.backend.mirrors"):
        run(main)
