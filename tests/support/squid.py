"""A real site cache for tests: Debian's squid on a loopback port, caching in memory, with a
config written here; stopped at the end, even when a test fails."""

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.daemons import listening
from tests.support.server import free_port

SQUID = shutil.which("squid") or "/usr/sbin/squid"
# range_offset_limit -1: a Range request makes squid fetch and keep the whole object, so
# later ranges of it are hits (as CVMFS sites configure it for large files).
CONF = """\
http_port 127.0.0.1:{port}
http_access allow all
pid_filename {run}/squid.pid
access_log stdio:{run}/access.log squid
cache_log {run}/cache.log
cache_store_log none
coredump_dir {run}
cache_mem 256 MB
maximum_object_size 128 MB
maximum_object_size_in_memory 128 MB
range_offset_limit -1
quick_abort_min -1 KB
shutdown_lifetime 1 seconds
"""


@contextmanager
def squid() -> Iterator[tuple[str, Path]]:
    """squid as an HTTP proxy; yields its URL and its access log (one line per request, the
    cache result such as TCP_MEM_HIT/200 in the fourth field). Its files are in a temp dir
    of its own, removed at the end: squid started as root works as user proxy, which must
    reach them (pytest's tmp_path is private to its user)."""
    if not os.path.exists(SQUID):
        pytest.fail("squid is not installed: `make install` installs it")
    run = Path(tempfile.mkdtemp(prefix="arkfs-squid-"))
    run.chmod(0o777)
    port = free_port()
    conf = run / "squid.conf"
    conf.write_text(CONF.format(port=port, run=run))
    log = run / "cache.log"
    try:
        with listening([SQUID, "-N", "-f", str(conf)], port, why=lambda: _text(log)):
            yield f"http://127.0.0.1:{port}", run / "access.log"
    finally:
        shutil.rmtree(run, ignore_errors=True)


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""
