"""The bars a long command draws on a terminal (rich): the whole and each phase, with
percent, bytes, rate and ETA (progress_display picks them for a terminal)."""

import time
from typing import TextIO

from rich.console import Console, RenderableType
from rich.live import Live
from rich.progress import BarColumn, ProgressColumn, Task, TaskID, TextColumn
from rich.progress import Progress as Bars
from rich.text import Text

from arkfs.cli.progress_display import REFRESH, Feed, Speed, duration, eta, percent
from arkfs.util.sizes import human


class _Percent(ProgressColumn):
    def render(self, task: Task) -> Text:
        share = percent(int(task.completed), None if task.total is None else int(task.total))
        return Text("" if share is None else f"{share:>3}%")


class _Bytes(ProgressColumn):
    def render(self, task: Task) -> Text:
        if task.fields.get("whole"):  # work of several kinds added up: no size
            return Text("")
        done = human(task.completed)
        return Text(done if task.total is None else f"{done}/{human(task.total)}")


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        rate = task.fields.get("rate")
        return Text("" if rate is None or task.fields.get("whole") else f"{human(rate)}/s")


class _Eta(ProgressColumn):
    def render(self, task: Task) -> Text:
        if task.finished:
            return Text("done")
        left = task.fields.get("eta")
        return Text("ETA -" if left is None else f"ETA {duration(left)}")


class Terminal:
    """Bars for the whole and each phase, redrawn REFRESH times a second."""

    def __init__(self, feed: Feed, stream: TextIO) -> None:
        self.feed = feed
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
        for name, (done, total) in self.feed.rows().items():
            if name not in self.tasks:
                whole = name == self.feed.whole
                self.tasks[name] = self.bars.add_task(
                    name, total=total, rate=None, eta=None, whole=whole
                )
                self.speeds[name] = Speed()
            rate = self.bars.tasks[self.tasks[name]].fields.get("rate")
            if rate is None or total is None or done < total:  # else: the rate it ended at
                rate = self.speeds[name].reading(now, done)
            self.bars.update(
                self.tasks[name],
                completed=done,
                total=total,
                description=self.feed.label(name),
                rate=rate,
                eta=eta(done, total, rate),
            )
        return self.bars.get_renderable()

    def start(self) -> None:
        self.live.start()

    def stop(self) -> None:
        self.live.stop()  # draws the final frame
