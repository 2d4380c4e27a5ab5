"""Shard intake in bounded time: each shard's check and registration runs once, in a task
of its own, and a request waits for it at most a few seconds.

Checking a shard reads every new file's bytes for its SHA-256 (shards.py), which for
gigabytes from a bucket takes longer than a client waits for a reply (10 s). The bytes do
not pass through `serve` at the shard POST, so the check cannot be skipped or moved into
the request; it is kept, and taken out of the request's time instead (rather than
verifying in the background after answering: a version is never bound on files whose
SHA-256 nobody checked yet). A POST of a shard whose intake is under way joins it rather
than starting the work again, so a retry costs nothing and the shard is registered once. A
finished intake's answer is kept for KEEP_DONE seconds for polls; a POST after it finished
is answered "already there" (result 0), as XET's Upload Shard answers a shard it holds.

A request that outwaits the intake is answered 503 with `Retry-After: 1` (hf_xet and every
client retry that), or, when it asked `Prefer: respond-async` (RFC 7240), 202 Accepted with
`Location: /v1/shard-intakes/{hash}` where it polls: 202 with the files checked so far
while under way, then 200 with the answer. A wait preference shortens the wait.

The intakes are those of this process: a retry that a load balancer sends to another
replica checks the shard again there, and the database registers it once.
"""

import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import trio
from starlette.responses import JSONResponse

from arkfs.server.http import HttpError

WAIT = 5.0  # seconds a shard POST waits for its intake: half the client's read timeout
RETRY_AFTER = 1  # seconds a client waits before it asks again
KEEP_DONE = 600.0  # seconds a finished intake's answer is kept for retries and polls
INTAKES_PATH = "/v1/shard-intakes/"  # where a client that asked respond-async polls

Progress = Callable[[int, int], None]  # told (files checked so far, files in the shard)
Register = Callable[[Progress], bool]  # the blocking intake of one shard
Run = Callable[[Register, Progress], Awaitable[bool]]  # runs it in a worker thread


@dataclass
class Intake:
    """One shard's intake: under way until done is set, then its answer or its error."""

    done: trio.Event = field(default_factory=trio.Event)
    checked: int = 0  # files checked so far (written by the worker thread)
    files: int = 0  # files the shard registers, once parsed
    inserted: bool = False
    error: Exception | None = None
    finished: float = math.inf  # time.monotonic() when done


class Pending(Exception):
    """The intake outlasted the request's wait: answer 202 or 503 (reply())."""

    def __init__(self, name: str, intake: Intake) -> None:
        super().__init__(name)
        self.name, self.intake = name, intake


class Intakes:
    """The shard intakes of this server, by shard hash string."""

    def __init__(self, run: Run) -> None:
        """run: the Face's run (a blocking call in a worker thread, under its limiter)."""
        self._run = run
        self._intakes: dict[str, Intake] = {}

    async def register(self, name: str, register: Register, wait: float = WAIT) -> bool:
        """The answer of the intake of shard name (started here unless one is under way or
        just done); Pending if it takes longer than wait seconds."""
        self._forget_old()
        intake = self._intakes.get(name)
        if intake is not None and intake.done.is_set() and intake.error is None:
            return False  # registered before this request came: it inserted nothing
        if intake is None or intake.error is not None:  # a failure is tried again
            intake = self._intakes[name] = Intake()
            trio.lowlevel.spawn_system_task(self._intake, intake, register, name=f"shard {name}")
        with trio.move_on_after(max(0.0, min(wait, WAIT))):
            await intake.done.wait()
        return self.answer(name, intake)

    def poll(self, name: str) -> bool:
        """The answer of shard name's intake; Pending while under way, 404 if unknown."""
        intake = self._intakes.get(name)
        if intake is None:
            raise HttpError(404, f"no intake of shard {name} here: upload the shard again")
        return self.answer(name, intake)

    @staticmethod
    def answer(name: str, intake: Intake) -> bool:
        """Whether the shard was newly registered; its error, or Pending."""
        if not intake.done.is_set():
            raise Pending(name, intake)
        if intake.error is not None:
            raise intake.error
        return intake.inserted

    async def _intake(self, intake: Intake, register: Register) -> None:
        """Run one intake to its end (a system task: it must not raise)."""

        def progress(checked: int, files: int) -> None:
            intake.checked, intake.files = checked, files

        try:
            intake.inserted = await self._run(register, progress)
        except Exception as exc:  # the requests waiting for it answer with it
            intake.error = exc
        finally:
            intake.finished = time.monotonic()
            intake.done.set()

    def _forget_old(self) -> None:
        cutoff = time.monotonic() - KEEP_DONE
        for name in [n for n, i in self._intakes.items() if i.finished < cutoff]:
            del self._intakes[name]


def wanted_wait(prefer: str | None) -> tuple[bool, float]:
    """Whether a Prefer header asks respond-async, and its wait preference (RFC 7240)."""
    asks_async, wait = False, WAIT
    for token in (prefer or "").lower().replace(" ", "").split(","):
        key, _, value = token.partition("=")
        if key == "respond-async":
            asks_async = True
        elif key == "wait" and value.isdigit():
            wait = float(value)
    return asks_async, wait


def still_checking(exc: Pending) -> HttpError:
    """The 503 for a client that did not ask respond-async: its retry joins the intake."""
    i = exc.intake
    return HttpError(
        503,
        f"shard {exc.name} is still being checked ({i.checked} of {i.files} files); retry: "
        "the retry joins the same check",
        {"Retry-After": str(RETRY_AFTER)},
    )


def accepted(exc: Pending) -> JSONResponse:
    """The 202 for a client that asked respond-async: where to poll, and the progress."""
    i = exc.intake
    return JSONResponse(
        {"pending": True, "checked": i.checked, "files": i.files},
        status_code=202,
        headers={"Retry-After": str(RETRY_AFTER), "Location": INTAKES_PATH + exc.name},
    )
