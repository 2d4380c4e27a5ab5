"""`arkfs serve --access-log`: Combined Log Format lines of a real server's requests, parsed
field by field; tokens, signed URLs' signatures and query secrets never reach the file."""

import os
import re
import signal
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from arkfs.xet.reconstruction import Reconstruction
from tests.support.archive import publish
from tests.support.cli import run_arkfs
from tests.support.secrets import leaks
from tests.support.server import arkfs_server

ARK = "ark:b5072/l0g5"
READER, WRITER = "reader-secret-7f3a", "writer-secret-9c1d"
_QUOTED = r'"((?:[^"\\]|\\.)*)"'
CLF = re.compile(
    rf"^(?P<host>\S+) (?P<ident>\S+) (?P<user>\S+) \[(?P<time>[^\]]+)\] {_QUOTED} "
    rf"(?P<status>\d{{3}}) (?P<bytes>\d+|-) {_QUOTED} {_QUOTED}$"
)


def parse(line: str) -> dict[str, str]:
    m = CLF.match(line)
    assert m, line
    request, referer, agent = m.group(5), m.group(8), m.group(9)
    return m.groupdict() | {"request": request, "referer": referer, "agent": agent}


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop the server gracefully, so every line it had to write is written."""
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def test_lines_parse_with_status_bytes_referrer_agent_and_no_secret(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text(f"{READER} read\n{WRITER} write\n")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.txt").write_bytes(b"access log\n" * 100)
    log = tmp_path / "access.log"
    serve = ("--tokens", str(tmp_path / "tokens"), "--access-log", str(log))
    read = {"Authorization": f"Bearer {READER}"}
    with arkfs_server(tmp_path / "store", *serve) as (url, proc):
        publish(tmp_path / "tree", ARK, "--server", url, "--token", WRITER)
        before = datetime.now(UTC) - timedelta(seconds=2)
        well_known = httpx.get(
            f"{url}/.well-known/ark",
            headers={"User-Agent": 'probe/1.0 "quoted"', "Referer": "http://ref.example/p?x=1"},
        )
        missing = httpx.get(f"{url}/{ARK}/nothing", headers=read)
        head = httpx.head(f"{url}/{ARK}/a%2Etxt", headers=read)
        page = httpx.get(f"{url}/{ARK}?info&format=json", headers=read)
        manifest = httpx.get(f"{url}/{ARK}?format=json", headers=read).json()
        file_id = manifest["entries"][0]["xet_hash"]
        rec = Reconstruction.from_json(
            httpx.get(f"{url}/v1/reconstructions/{file_id}", headers=read).json()
        )
        [[fetch, *_]] = rec.fetch.values()
        assert "sig=" in fetch.url
        xorb = httpx.get(fetch.url, headers={"Referer": fetch.url})
        leaky = httpx.get(f"{url}/{ARK}?token={READER}&info", headers=read)
        stop(proc)
    assert page.status_code == 200 and well_known.status_code == 200 and missing.status_code == 404
    assert head.status_code == 200 and xorb.status_code == 200 and leaky.status_code == 200
    lines = [parse(line) for line in log.read_text().splitlines()]
    by_request = {tuple(e["request"].split()[:2]): e for e in lines}
    w = by_request[("GET", "/.well-known/ark")]
    assert w["host"] == "127.0.0.1" and w["ident"] == "-" and w["user"] == "-"
    assert w["status"] == "200" and int(w["bytes"]) == len(well_known.content)
    assert w["referer"] == "http://ref.example/p?x=1"
    assert w["agent"] == 'probe/1.0 \\"quoted\\"'
    assert w["request"] == "GET /.well-known/ark HTTP/1.1"
    when = datetime.strptime(w["time"], "%d/%b/%Y:%H:%M:%S %z")
    assert before <= when <= datetime.now(UTC)
    n = by_request[("GET", f"/{ARK}/nothing")]
    assert n["status"] == "404" and int(n["bytes"]) == len(missing.content)
    assert n["user"] == "-" and n["agent"].startswith("python-httpx/")
    h = by_request[("HEAD", f"/{ARK}/a%2Etxt")]
    assert h["status"] == "200" and h["bytes"] == "-" and h["referer"] == "-"
    [x] = [e for e in lines if "/v1/xorb-data/" in e["request"]]
    assert x["status"] == "200" and int(x["bytes"]) == len(xorb.content)
    assert "?" not in x["request"] and x["referer"] == fetch.url.split("?")[0]
    assert by_request[("GET", f"/{ARK}")]["status"] == "200"  # the ?token= query dropped
    puts = [e for e in lines if e["request"].startswith("PUT ")]
    assert [e["status"] for e in puts] == ["200"]
    text = log.read_text()
    assert READER not in text and WRITER not in text and "sig=" not in text
    assert leaks([log], [READER, WRITER]) == []


def test_dash_writes_to_stdout_and_an_unwritable_file_is_one_line_exit_2(tmp_path: Path) -> None:
    with arkfs_server(tmp_path / "store", "--open-read", "--access-log", "-") as (url, proc):
        got = httpx.get(f"{url}/.well-known/ark", headers={"User-Agent": "dash-test"})
        stop(proc)
        out = proc.stdout.read().splitlines()  # type: ignore[union-attr]
    [line] = [parse(line) for line in out if "dash-test" in line]
    assert line["status"] == "200" and int(line["bytes"]) == len(got.content)
    done = run_arkfs(
        "serve", "--store", str(tmp_path / "s"), "--open-read", "--port", "0",
        "--access-log", str(tmp_path / "no" / "such" / "dir" / "access.log"),
    )  # fmt: skip
    assert done.returncode == 2
    [message] = done.stderr.splitlines()
    assert "cannot open access log" in message and "No such file or directory" in message


def test_the_client_is_what_trusted_proxies_forward(tmp_path: Path) -> None:
    """X-Forwarded-For names the client only through trusted proxies (as nginx's realip with
    real_ip_recursive): the nearest untrusted hop; from anyone else it is ignored."""
    hops = {"X-Forwarded-For": "198.51.100.9, 203.0.113.7, 10.1.2.3"}
    hosts: dict[str, str] = {}
    for trusted in ("", "127.0.0.1", "127.0.0.1,10.0.0.0/8"):
        log = tmp_path / f"access-{len(hosts)}.log"
        allow = ("--forwarded-allow-ips", trusted) if trusted else ()
        with arkfs_server(tmp_path / "store", "--access-log", str(log), *allow) as (url, proc):
            assert httpx.get(f"{url}/.well-known/ark", headers=hops).status_code == 200
            stop(proc)
        (line,) = log.read_text().splitlines()
        hosts[trusted] = parse(line)["host"]
    assert hosts == {
        "": "127.0.0.1",  # no proxy is trusted: the header is anyone's to forge
        "127.0.0.1": "10.1.2.3",  # the proxy's own peer, which nothing trusts
        "127.0.0.1,10.0.0.0/8": "203.0.113.7",
    }
