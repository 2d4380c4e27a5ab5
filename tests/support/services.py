"""Real SeaweedFS (S3) and PostgreSQL servers on 127.0.0.1, on free ports under temp dirs,
stopped and removed even when a test fails; fresh buckets and databases for each test."""

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import boto3
import botocore.config
import psycopg

# Debian's postgresql package: the newest installed major version (15 on Debian 12).
PG_BIN = max(
    Path("/usr/lib/postgresql").glob("*/bin"),
    key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    default=Path("/usr/lib/postgresql/15/bin"),  # missing: `make install` installs it
)
WEED = Path(sys.executable).parent / "weed"
_TMP = Path("/tmp")  # where SeaweedFS puts its unix sockets
PG_USER = "arkfs"
START_TIMEOUT = 60.0  # seconds a server may take to answer

# The test servers accept any credentials; the standard AWS variables carry them to boto3
# in this process and in every `arkfs serve` it starts.
os.environ.update(
    AWS_ACCESS_KEY_ID="arkfs-test",
    AWS_SECRET_ACCESS_KEY="arkfs-test-secret",
    AWS_REGION="us-east-1",
    AWS_CONFIG_FILE=os.devnull,
    AWS_SHARED_CREDENTIALS_FILE=os.devnull,
)


def _free_ports(count: int, grpc: bool = False) -> list[int]:
    """count distinct free TCP ports on 127.0.0.1 (each port + 10000 free too if grpc)."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port in ports or (grpc and (port + 10000 > 65535 or not _is_free(port + 10000))):
            continue
        ports.append(port)
    return ports


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _wait(ready: Callable[[], bool], proc: subprocess.Popen[bytes] | None, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        if ready():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not answer within {START_TIMEOUT} s")


class SeaweedFS:
    """`weed server -s3` in a temp dir; start() and stop() may repeat on the same ports."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="arkfs-weed-"))
        self.s3_port, self.master, self.volume, self.filer = _free_ports(4, grpc=True)
        self.endpoint = f"http://127.0.0.1:{self.s3_port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._bucket: str | None = None
        self.client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            config=botocore.config.Config(
                connect_timeout=2, read_timeout=30, retries={"total_max_attempts": 1}
            ),
        )

    def start(self) -> None:
        """Start the server and wait until S3 answers."""
        assert self.proc is None
        log = open(self.dir / "weed.log", "ab")  # noqa: SIM115  # closed with the process
        self.proc = subprocess.Popen(
            [
                str(WEED),
                "server",
                f"-dir={self.dir}",
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                "-s3",
                f"-s3.port={self.s3_port}",
                f"-master.port={self.master}",
                f"-volume.port={self.volume}",
                f"-filer.port={self.filer}",
                "-s3.port.iceberg=0",  # fixed ports otherwise (8181, 9101), which clash
                "-s3.port.lance=0",
                "-master.telemetry=false",
                "-master.volumeSizeLimitMB=256",
                "-volume.max=64",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=os.environ | {"TMPDIR": str(self.dir)},  # its logs and sockets, not /tmp's
        )
        log.close()
        _wait(self._answers, self.proc, "SeaweedFS")

    def _answers(self) -> bool:
        try:
            self.client.list_buckets()
        except Exception:
            return False
        return True

    def stop(self) -> None:
        """Kill the server, as a crash would (SIGTERM takes it 25 s); its data stays."""
        if self.proc is not None:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def bucket(self) -> str:
        """The one bucket of this server's tests, created on first use: each test takes a
        key prefix of its own (SeaweedFS gives every bucket volumes of its own, and runs
        out of them after a few dozen buckets)."""
        if self._bucket is not None:
            return self._bucket
        name = f"t-{uuid.uuid4().hex[:16]}"
        self.client.create_bucket(Bucket=name)
        # SeaweedFS creates a bucket's volumes on its first write: make that write here.
        self.client.put_object(Bucket=name, Key="warm-up", Body=b"")
        self.client.delete_object(Bucket=name, Key="warm-up")
        self._bucket = name
        return name

    def objects(self, bucket: str, prefix: str = "") -> dict[str, int]:
        """Key and size of every object in bucket under prefix."""
        found: dict[str, int] = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix
        ):
            found.update((o["Key"], o["Size"]) for o in page.get("Contents", []))
        return found

    def remove(self) -> None:
        """Stop the server and delete its directory, and the unix sockets SeaweedFS leaves
        in /tmp whatever TMPDIR says (/tmp/seaweedfs-SERVICE[-grpc]-PORT.sock)."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        for port in (self.s3_port, self.master, self.volume, self.filer):
            for sock in (
                *_TMP.glob(f"seaweedfs-*-{port}.sock"),
                *_TMP.glob(f"seaweedfs-*-{port + 10000}.sock"),
            ):
                sock.unlink(missing_ok=True)


class PostgreSQL:
    """A PostgreSQL 15 cluster in a temp dir (as user postgres when run as root)."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="arkfs-pg-"))
        self.data = self.dir / "data"
        (self.port,) = _free_ports(1)
        self._as_postgres = os.getuid() == 0
        if self._as_postgres:
            entry = pwd.getpwnam("postgres")
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._run(PG_BIN / "initdb", "-D", str(self.data), "-A", "trust", "-U", PG_USER)

    def _run(self, *argv: object) -> None:
        cmd = [str(a) for a in argv]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=START_TIMEOUT)

    def start(self) -> None:
        """Start the cluster and wait until it accepts connections."""
        options = (
            f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c max_connections=300"
        )
        self._run(
            PG_BIN / "pg_ctl", "-D", self.data, "-o", options, "-l", self.dir / "log", "-w", "start"
        )

    def stop(self) -> None:
        """Stop the cluster at once (its data stays for a restart)."""
        with contextlib.suppress(subprocess.CalledProcessError):  # not running
            self._run(PG_BIN / "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")

    def url(self, db: str = "postgres") -> str:
        """The URL of database db."""
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        """A new empty database; its URL."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def remove(self) -> None:
        """Stop the cluster and delete its directory."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@dataclass(frozen=True)
class ScaledPlace:
    """Where a scaled store lives: its s3:// location, S3 endpoint and index URL."""

    location: str
    endpoint: str
    index: str

    def serve_args(self) -> tuple[str, ...]:
        """The `arkfs serve` options that select this store."""
        return ("--store", self.location, "--s3-endpoint", self.endpoint, "--index", self.index)


def new_place(weed: SeaweedFS, pg: PostgreSQL, init: bool = True) -> ScaledPlace:
    """A new empty key prefix in the tests' bucket, and a new database: a store initialised
    as `arkfs store init` does (its schema and identity), unless init is False."""
    prefix = f"p-{uuid.uuid4().hex[:12]}"
    place = ScaledPlace(f"s3://{weed.bucket()}/{prefix}", weed.endpoint, pg.new_database())
    if init:
        init_store(place)
    return place


def init_store(place: ScaledPlace) -> list[str]:
    """Initialise the store at place (schema and identity); what `store init` printed."""
    from arkfs.store.bucket import Bucket
    from arkfs.store.identity import initialise
    from arkfs.store.postgres import Index

    index = Index.connect(place.index, connections=1)
    try:
        return initialise(Bucket.open(place.location, place.endpoint, 1), index)
    finally:
        index.close()


_S = TypeVar("_S", SeaweedFS, PostgreSQL)


@contextmanager
def running(server: _S) -> Iterator[_S]:
    """A started server, stopped and removed at the end, even on failure."""
    try:
        server.start()
        yield server
    finally:
        server.remove()


# ARKFS_TEST_STORE=s3: every `arkfs serve` the tests start (tests/support/server.py) runs
# on a bucket and database instead of its store directory, so that suites written for the
# directory store run unchanged against the scaled one (tests/scale/test_unchanged.py).
TEST_STORE_VARIABLE = "ARKFS_TEST_STORE"
_shared: list[SeaweedFS | PostgreSQL] = []
_places: dict[str, ScaledPlace] = {}


def scaled_instead() -> bool:
    """Do the tests run their servers on the scaled store?"""
    return os.environ.get(TEST_STORE_VARIABLE) == "s3"


def place_for(store: Path | str) -> ScaledPlace:
    """The bucket and database standing in for a store directory: the same for the same
    directory (a restarted server finds what it stored); servers started on first use."""
    if not _shared:
        s3, database = SeaweedFS(), PostgreSQL()
        _shared.extend((s3, database))
        atexit.register(_remove_shared)
        s3.start()
        database.start()
    weed, pg = _shared
    assert isinstance(weed, SeaweedFS) and isinstance(pg, PostgreSQL)
    key = str(Path(store).resolve())
    if key not in _places:
        _places[key] = new_place(weed, pg)
        if log := os.environ.get(f"{TEST_STORE_VARIABLE}_LOG"):  # which tests went there
            with open(log, "a") as f:
                f.write(f"{key} {_places[key].location}\n")
    return _places[key]


def _remove_shared() -> None:
    for server in _shared:
        server.remove()
