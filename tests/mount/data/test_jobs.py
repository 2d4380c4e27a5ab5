"""jobs.run_cpu: small CPU work stays on the trio thread, bigger work goes to a worker."""

import threading

import pytest
import trio

from arkfs.mount.data.jobs import INLINE_BYTES, run_cpu

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_work_on_at_most_inline_bytes_runs_in_place_and_more_in_a_worker_thread() -> None:
    async def main() -> None:
        here, limiter = threading.get_ident(), trio.CapacityLimiter(1)
        small = await run_cpu(threading.get_ident, covers=INLINE_BYTES, limiter=limiter)
        big = await run_cpu(threading.get_ident, covers=INLINE_BYTES + 1, limiter=limiter)
        assert small == here and big != here
        with pytest.raises(ZeroDivisionError):  # an error comes out the same either way
            await run_cpu(divmod, 1, 0, covers=0, limiter=limiter)
        with pytest.raises(ZeroDivisionError):
            await run_cpu(divmod, 1, 0, covers=INLINE_BYTES + 1, limiter=limiter)

    trio.run(main)
