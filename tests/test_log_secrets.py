"""The check that no log holds a secret finds one when there is one (conftest runs it over
every log of the session)."""

from pathlib import Path

import pytest

from tests.support.secrets import leaks, logs_under, tokens_in

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_the_secret_check_finds_tokens_and_signatures(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("s3cret-writer write\nr read\n")
    (tmp_path / "cache").mkdir()
    log = tmp_path / "cache" / "mount.log"
    clean = "ERROR refused the token (missing bearer token: pass --token); cache_writer ok\n"
    log.write_text(clean)
    try:
        assert logs_under(tmp_path) == [log]
        assert tokens_in(tmp_path) == {"s3cret-writer"}
        assert leaks([log], tokens_in(tmp_path)) == []
        for secret in (
            "GET http://h/v1/xorb-data/ab?expires=1&sig=" + "0f" * 32,
            "Authorization: Bearer abcdef123456",
            "token arkfs1.read.1700000000." + "a" * 64,
            "sent s3cret-writer to the server",
            "https://s3/b/k?X-Amz-Signature=abc",
            "https://h/o?a=1&token=abc",
            "ark resolves to http://user:pw@h/o",
            "https://storage/b/o?X-Goog-Signature=abc",
        ):
            log.write_text(clean + secret + "\n")
            assert len(leaks([log], tokens_in(tmp_path))) == 1, secret
    finally:
        log.unlink()  # the session's own check reads every log left behind


def test_the_secret_check_reads_access_logs_and_servers_stdout(tmp_path: Path) -> None:
    """`serve --access-log FILE` (named *.log in the tests) and `--access-log -` (the
    server's stdout, kept as serve-PID.out.log by tests/support/server.py) are scanned."""
    line = '127.0.0.1 - - [24/Nov/2026:00:00:41 +0000] "GET /v1/xorb-data/ab?expires=1&sig='
    for name in ("access.log", "serve-123.out.log"):
        log = tmp_path / name
        try:
            log.write_text(line + "0f" * 32 + ' HTTP/1.1" 200 184 "-" "curl/8"\n')
            assert logs_under(tmp_path) == [log]
            assert len(leaks([log])) == 1
        finally:
            log.unlink()
