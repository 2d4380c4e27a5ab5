"""How `arkfs publish` shows its progress on stderr: rich bars on a terminal, a short plain
line at each phase and every few seconds elsewhere, nothing with --quiet.

Both displays run in their own thread and only read the publish's counters (plain ints),
so the trio thread never waits for a terminal."""

import math
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console, RenderableType
from rich.live import Live
from rich.progress import BarColumn, ProgressColumn, Task, TaskID, TextColumn
from rich.progress import Progress as Bars
from rich.text import Text

from arkfs.publish.progress import DONE, Progress
from arkfs.util.sizes import human

OVERALL = "publish"
REFRESH = 10  # terminal frames a second
PLAIN_EVERY = 5.0  # seconds between plain lines within a phase
PLAIN_POLL = 0.2  # seconds between looks at the counters for the plain lines
RATE_WINDOW = 10.0  # seconds of readings a rate is measured over


def rows(p: Progress) -> dict[str, tuple[int, int | None]]:
    """Done and total (None: not known yet) of the whole publish and of each phase begun,
    in bytes, in the order they began."""
    later = len(p.phases) > 1
    every = {
        OVERALL: p.overall(),
        "scan": (p.total, p.total if later else None),
        "hash": (p.hashed, p.total),
        "upload": (p.stored, p.new),
        "bind": (p.shards_sent, p.shard_bytes or None),
    }
    return {name: every[name] for name in (OVERALL, *p.phases) if name in every}


def percent(done: int, total: int | None) -> int | None:
    """Whole percent, rounded down: 100 only once done reaches total."""
    if total is None:
        return None
    return 100 if done >= total else math.floor(100 * done / total)


class Speed:
    """Bytes a second of one row, over its readings of the last RATE_WINDOW seconds (rich's
    own estimate starts again whenever a total changes, and totals here grow as hashing
    finds new data)."""

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


class _Percent(ProgressColumn):
    def render(self, task: Task) -> Text:
        share = percent(int(task.completed), None if task.total is None else int(task.total))
        return Text("" if share is None else f"{share:>3}%")


class _Bytes(ProgressColumn):
    def render(self, task: Task) -> Text:
        if task.description == OVERALL:  # work in bytes hashed, uploaded and sent: no size
            return Text("")
        done = human(task.completed)
        return Text(done if task.total is None else f"{done}/{human(task.total)}")


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        rate = task.fields.get("rate")
        return Text("" if rate is None or task.description == OVERALL else f"{human(rate)}/s")


class _Eta(ProgressColumn):
    def render(self, task: Task) -> Text:
        if task.finished:
            return Text("done")
        left = task.fields.get("eta")
        return Text("ETA -" if left is None else f"ETA {duration(left)}")


class _Terminal:
    """Bars for the whole publish and each phase, redrawn REFRESH times a second."""

    def __init__(self, progress: Progress, stream: TextIO) -> None:
        self.progress = progress
        console = Console(file=stream)
        self.bars = Bars(
            TextColumn("{task.description:<7}"),
            BarColumn(bar_width=28),
            _Percent(),
            _Bytes(),
            _Rate(),
            _Eta(),
            console=console,
            auto_refresh=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.speeds: dict[str, Speed] = {}
        self.live = Live(
            console=console,
            get_renderable=self._frame,
            refresh_per_second=REFRESH,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def _frame(self) -> RenderableType:
        """The bars as the counters stand now (run by rich's refresh thread)."""
        now = time.monotonic()
        version = self.progress.version
        for name, (done, total) in rows(self.progress).items():
            if name not in self.tasks:
                self.tasks[name] = self.bars.add_task(name, total=total, rate=None, eta=None)
                self.speeds[name] = Speed()
            rate = self.bars.tasks[self.tasks[name]].fields.get("rate")
            if rate is None or total is None or done < total:  # else: the rate it ended at
                rate = self.speeds[name].reading(now, done)
            label = _outcome(self.progress) if name == "bind" and version is not None else name
            self.bars.update(
                self.tasks[name],
                completed=done,
                total=total,
                description=label,
                rate=rate,
                eta=eta(done, total, rate),
            )
        return self.bars.get_renderable()

    def start(self) -> None:
        self.live.start()

    def stop(self) -> None:
        self.live.stop()  # draws the final frame


class _Lines:
    """A short line as each phase begins and every PLAIN_EVERY seconds, then a summary."""

    def __init__(self, progress: Progress, stream: TextIO) -> None:
        self.progress, self.stream = progress, stream
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="arkfs-progress", daemon=True)
        self.began = time.monotonic()
        self.speed = Speed()  # of the phase under way

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()
        if self.progress.version is not None:
            self._say(self._summary())

    def _run(self) -> None:
        told = 0  # phases already announced
        last = time.monotonic()
        while True:
            stop = self.stopping.wait(PLAIN_POLL)
            if stop and self.progress.version is None:
                return  # failed: the error is the last word
            phases = [p for p in self.progress.phases if p != DONE]
            if len(phases) > told:
                self.speed = Speed()
            rate = self.speed.reading(time.monotonic(), rows(self.progress)[phases[-1]][0])
            for phase in phases[told:]:
                self._say(self._line(phase, rate))
                last = time.monotonic()
            told = len(phases)
            if stop:
                return
            if time.monotonic() - last >= PLAIN_EVERY:
                self._say(self._line(phases[-1], rate))
                last = time.monotonic()

    def _line(self, phase: str, rate: float | None) -> str:
        """publish 37%: hash 120.0 MiB/320.0 MiB at 30.0 MiB/s, ETA 7s; a phase seen only
        once over: the whole as it began (publish 0%: hash)."""
        if phase != self.progress.phases[-1]:
            return f"publish {percent(*self.progress.began[phase])}%: {phase}"
        now = rows(self.progress)
        done, total = now[phase]
        text = f"publish {percent(*now[OVERALL])}%: {phase} {human(done)}"
        if total is not None:
            text += f"/{human(total)}"
        left = eta(done, total, rate)
        if rate is not None and left is not None and done < (total or 0):
            text += f" at {human(rate)}/s, ETA {duration(left)}"
        return text

    def _summary(self) -> str:
        p = self.progress
        return (
            f"publish 100%: {_outcome(p)}: {p.files} files, {human(p.total)}, {_read(p)}, "
            f"{human(p.new)} new ({human(p.uploaded)} uploaded), {human(p.deduplicated)} "
            f"deduplicated, in {duration(time.monotonic() - self.began)}"
        )

    def _say(self, line: str) -> None:
        self.stream.write(line + "\n")
        self.stream.flush()


def duration(seconds: float) -> str:
    """Seconds for people: 7s, 3m05s, 2h10m."""
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02}s"
    return f"{s // 3600}h{s % 3600 // 60:02}m"


@contextmanager
def shown(progress: Progress, quiet: bool, stream: TextIO | None = None) -> Iterator[None]:
    """Show progress on stream (stderr) while the block runs: bars on a terminal, plain
    lines elsewhere, nothing when quiet."""
    out = sys.stderr if stream is None else stream
    if quiet:
        yield
        return
    display = _Terminal(progress, out) if out.isatty() else _Lines(progress, out)
    display.start()
    try:
        yield
    finally:
        display.stop()


def _read(p: Progress) -> str:
    """How much was read and hashed, and how much the tree index knew unchanged (bytes
    counted as hashed in the bars, but not read)."""
    unread = f" ({human(p.known)} unchanged since the last publish: not read)" if p.known else ""
    return f"{human(p.read)} read{unread}"


def _outcome(p: Progress) -> str:
    """How a finished publish ended: 'bound vN', or 'nothing changed since vN'."""
    return f"nothing changed since v{p.version}" if p.unchanged else f"bound v{p.version}"
