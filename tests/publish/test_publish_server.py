"""Publishing to `arkfs serve` and binding hf_xet uploads: hf_xet and arkfs read each other."""

import hashlib
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trio

from arkfs.backend.remote import RemoteBackend
from arkfs.xet.hashing import hash_to_string, string_to_hash
from arkfs.xet.xorb import decode_range
from tests.support.cli import ARKFS, run_arkfs
from tests.support.corpus import write_corpus
from tests.support.hfxet import download_file, download_range, upload_files
from tests.support.server import arkfs_server

WRITE, READ = "w-token", "r-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("served")
    tokens = root / "tokens"
    tokens.write_text(f"{WRITE} write\n{READ} read\n")
    with arkfs_server(root / "store", "--tokens", str(tokens)) as (url, _):
        yield url


def publish(url: str, tree: Path, ark: str) -> str:
    env = os.environ | {"ARKFS_TOKEN": WRITE}
    import subprocess

    out = subprocess.run(
        [ARKFS, "publish", str(tree), "--ark", ark, "--server", url],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def manifest_json(url: str, ark: str) -> dict:
    r = httpx.get(
        f"{url}/{ark}", headers={"Accept": "application/json", "Authorization": f"Bearer {READ}"}
    )
    r.raise_for_status()
    return r.json()


def test_hf_xet_downloads_what_arkfs_published(server: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    paths = write_corpus(tree / "sub")
    publish(server, tree, "ark:12345/pub1")
    files = [e for e in manifest_json(server, "ark:12345/pub1")["entries"] if e["kind"] == "file"]
    assert len(files) == len(paths)
    rng = random.Random(5)
    for e in files:
        data = (tree / e["path"]).read_bytes()
        dest = tmp_path / "out"
        download_file(server, e["xet_hash"], e["size"], dest, token=READ)
        assert dest.read_bytes() == data, e["path"]
        for _ in range(3 if data else 0):
            start = rng.randrange(len(data))
            end = rng.randint(start + 1, len(data))
            assert (
                download_range(server, e["xet_hash"], e["size"], start, end, token=READ)
                == data[start:end]
            )


async def read_with_our_client(url: str, file_hash: bytes, size: int) -> bytes:
    """Whole file through RemoteBackend: reconstruction, fetch and chunk-verified decode."""
    if size == 0:
        return b""  # Backend.reconstruction asks for end > start
    backend = RemoteBackend(url, READ)
    try:
        rec = await backend.reconstruction(file_hash, 0, size)
        parts = []
        for term in rec.terms:
            fr = rec.fetch_for(term)
            footer = await backend.footer(term.xorb_hash, fr)
            packed = await backend.fetch(term.xorb_hash, fr)
            parts += decode_range(packed, footer, term.start, term.end, fr.byte_start)
        return b"".join(parts)[rec.offset_into_first_range :][:size]
    finally:
        await backend.aclose()


def test_arkfs_binds_and_reads_what_hf_xet_uploaded(server: str, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    paths = list(write_corpus(src).values())
    big = src / "random-256MiB"
    with big.open("wb") as f:
        rng = random.Random(256)
        for _ in range(16):
            f.write(rng.randbytes(16 * 1024 * 1024))
    paths.append(big)
    infos = upload_files(server, paths, token=WRITE)
    listing = tmp_path / "files.json"
    listing.write_text(
        json.dumps(
            [
                {"path": f"data/{p.name}", "hash": info.hash, "size": info.file_size}
                for p, info in zip(paths, infos, strict=True)
            ]
        )
    )
    out = run_arkfs(
        "bind",
        "ark:12345/hfx",
        "--manifest",
        str(listing),
        "--server",
        server,
        "--token",
        WRITE,
        "--who",
        "hf_xet",
    )
    assert out.returncode == 0, out.stderr
    auth = {"Authorization": f"Bearer {READ}"}
    with httpx.Client(timeout=120, headers=auth) as client:
        for p, info in zip(paths, infos, strict=True):
            expected = hashlib.sha256(p.read_bytes()).digest()
            got = trio.run(read_with_our_client, server, string_to_hash(info.hash), info.file_size)
            assert hashlib.sha256(got).digest() == expected, p.name
            digest = hashlib.sha256()
            with client.stream(
                "GET", f"{server}/ark:12345/hfx/data/{p.name.replace('-', '%2D')}"
            ) as r:
                assert r.status_code == 200, p.name
                for part in r.iter_bytes():
                    digest.update(part)
            assert digest.digest() == expected, p.name
    assert hash_to_string(string_to_hash(infos[0].hash)) == infos[0].hash


def test_publish_and_versions_take_a_token_file_and_hide_a_token(
    server: str, tmp_path: Path
) -> None:
    import subprocess

    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("token file\n")
    token_file = tmp_path / "write-token"
    token_file.write_text(f"{WRITE}\n")
    env = {k: v for k, v in os.environ.items() if k != "ARKFS_TOKEN"}
    ark = "ark:12345/x6tokenfile"

    def arkfs(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ARKFS, *args], env=env, capture_output=True, text=True, timeout=120, check=False
        )

    done = arkfs(
        "publish", str(tree), "--ark", ark, "--server", server, "--token-file", str(token_file)
    )
    assert done.returncode == 0, done.stderr
    assert manifest_json(server, ark)["ark"] == ark
    # Without a token the same publish is refused: the file's token was the one that worked.
    done = arkfs("publish", str(tree), "--ark", ark, "--server", server)
    assert done.returncode != 0 and "token" in done.stderr
    done = arkfs("versions", ark, "--server", server, "--token-file", str(token_file))
    assert done.returncode == 0 and "v1" in done.stdout, done.stderr
    missing = arkfs(
        "publish",
        str(tree),
        "--ark",
        ark,
        "--server",
        server,
        "--token-file",
        str(tmp_path / "absent"),
    )
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1, missing.stderr
    assert "cannot read the token file" in missing.stderr


def test_a_token_given_as_an_argument_leaves_the_command_line() -> None:
    import subprocess
    import sys

    secret = "s3cret-" + os.urandom(4).hex()
    script = (
        "import argparse, pathlib, sys\n"
        "from arkfs.cli.token_options import add_token_options, token_from\n"
        "p = argparse.ArgumentParser(); add_token_options(p, 'test')\n"
        "assert token_from(p.parse_args(sys.argv[1:])) == sys.argv[2]  # argv is a copy\n"
        "print(pathlib.Path('/proc/self/cmdline').read_bytes().decode())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, "--token", secret],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert secret not in out.stdout and "*" * len(secret) in out.stdout
