"""Handler guarding: only FUSEError may leave a handler, or pyfuse3.main() ends the mount."""

import errno

import pyfuse3
import pytest
import trio

from arkfs.backend.base import BadReply, NotBound, Unauthorized, Unreachable
from arkfs.mount.fuse.operations import guarded

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


@pytest.mark.parametrize(
    ("raised", "code", "logged"),
    [
        (ValueError("boom"), errno.EIO, "handler failed: ValueError('boom')"),
        (Unreachable("http://x is down"), errno.EIO, "handler: http://x is down"),
        (BadReply("bad"), errno.EIO, "handler: bad"),
        (Unauthorized("token refused"), errno.EACCES, "handler: token refused"),
        (NotBound("no archive"), errno.ENOENT, None),
        (pyfuse3.FUSEError(errno.ENOTDIR), errno.ENOTDIR, None),
    ],
)
def test_guarded_handlers_raise_only_fuse_errors(
    raised: Exception, code: int, logged: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    @guarded
    async def handler() -> None:
        raise raised

    with pytest.raises(pyfuse3.FUSEError) as caught:
        trio.run(handler)
    assert caught.value.errno == code
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == ([logged] if logged else [])
