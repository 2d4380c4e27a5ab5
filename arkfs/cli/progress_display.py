"""How a long command (`arkfs publish`, `arkfs get`) shows its progress on stderr: rich bars
on a terminal, a short plain line at each phase and every few seconds elsewhere, nothing with
--quiet.

A command hands over a Feed, which reads its counters (plain ints). Both displays run in a
thread of their own and only read the feed, so the trio thread never waits for a terminal."""

import math
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TextIO

from arkfs.util.sizes import human

if TYPE_CHECKING:
    pass

REFRESH = 10  # terminal frames a second
PLAIN_EVERY = 5.0  # seconds between plain lines within a phase
PLAIN_POLL = 0.2  # seconds between looks at the counters for the plain lines
RATE_WINDOW = 10.0  # seconds of readings a rate is measured over


class Feed(Protocol):
    """A command's counters as the displays read them: a whole row named after the command,
    then one row per phase, in bytes."""

    whole: str  # the whole's row: the command's name

    def rows(self) -> dict[str, tuple[int, int | None]]:
        """Done and total (None: not known yet) of the whole, then of each phase begun, in
        the order they began."""
        ...

    def began(self, phase: str) -> tuple[int, int]:
        """The whole's done and total when phase began."""
        ...

    def finished(self) -> bool:
        """Whether the command has done all it set out to do."""
        ...

    def label(self, row: str) -> str:
        """What row is called on a terminal now (a finished phase may say how it ended)."""
        ...

    def summary(self, seconds: float) -> str:
        """The last plain line, once finished after seconds."""
        ...


def percent(done: int, total: int | None) -> int | None:
    """Whole percent, rounded down: 100 only once done reaches total."""
    if total is None:
        return None
    return 100 if done >= total else math.floor(100 * done / total)


class Speed:
    """Bytes a second of one row, over its readings of the last RATE_WINDOW seconds (rich's
    own estimate starts again whenever a total changes, and totals grow as work is found)."""

    def __init__(self) -> None:
        self.readings: deque[tuple[float, int]] = deque()

    def reading(self, now: float, done: int) -> float | None:
        """Note done at now; the rate, None until there is one."""
        self.readings.append((now, done))
        while len(self.readings) > 2 and now - self.readings[0][0] > RATE_WINDOW:
            self.readings.popleft()
        then, done_then = self.readings[0]
        return (done - done_then) / (now - then) if now > then and done > done_then else None


def eta(done: int, total: int | None, rate: float | None) -> float | None:
    """Seconds left at rate; None when that is not known."""
    if total is None or not rate:
        return None
    return max(total - done, 0) / rate


def duration(seconds: float) -> str:
    """Seconds for people: 7s, 3m05s, 2h10m."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02}s"
    return f"{s // 3600}h{s % 3600 // 60:02}m"


class _Lines:
    """A short line as each phase begins and every PLAIN_EVERY seconds, then a summary."""

    def __init__(self, feed: Feed, stream: TextIO) -> None:
        self.feed, self.stream = feed, stream
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="arkfs-progress", daemon=True)
        self.began = time.monotonic()
        self.speed = Speed()  # of the phase under way

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()
        if self.feed.finished():
            self._say(self.feed.summary(time.monotonic() - self.began))

    def _run(self) -> None:
        told = 0  # phases already announced
        last = time.monotonic()
        while True:
            stop = self.stopping.wait(PLAIN_POLL)
            if stop and not self.feed.finished():
                return  # failed: the error is the last word
            phases = [name for name in self.feed.rows() if name != self.feed.whole]
            if len(phases) > told:
                self.speed = Speed()
            rate = self.speed.reading(time.monotonic(), self.feed.rows()[phases[-1]][0])
            for phase in phases[told:]:
                self._say(self._line(phase, phases[-1], rate))
                last = time.monotonic()
            told = len(phases)
            if stop:
                return
            if time.monotonic() - last >= PLAIN_EVERY:
                self._say(self._line(phases[-1], phases[-1], rate))
                last = time.monotonic()

    def _line(self, phase: str, latest: str, rate: float | None) -> str:
        """publish 37%: hash 120.0 MiB/320.0 MiB at 30.0 MiB/s, ETA 7s; a phase seen only
        once over: the whole as it began (publish 0%: hash)."""
        whole = self.feed.whole
        if phase != latest:
            return f"{whole} {percent(*self.feed.began(phase))}%: {phase}"
        now = self.feed.rows()
        done, total = now[phase]
        text = f"{whole} {percent(*now[whole])}%: {phase} {human(done)}"
        if total is not None:
            text += f"/{human(total)}"
        left = eta(done, total, rate)
        if rate is not None and left is not None and done < (total or 0):
            text += f" at {human(rate)}/s, ETA {duration(left)}"
        return text

    def _say(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()


@contextmanager
def shown(feed: Feed, quiet: bool, stream: TextIO | None = None) -> Iterator[None]:
    """Show feed's progress on stream (stderr) while the block runs: bars on a terminal,
    plain lines elsewhere, nothing when quiet."""
    out = sys.stderr if stream is None else stream
    if quiet:
        yield
        return
    if out.isatty():
        from arkfs.cli.progress_bars import Terminal  # rich loads only to draw bars

        display: Terminal | _Lines = Terminal(feed, out)
    else:
        display = _Lines(feed, out)
    display.start()
    try:
        yield
    finally:
        display.stop()
