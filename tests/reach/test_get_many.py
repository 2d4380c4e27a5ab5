"""A get of many small files asks for their maps a hundred files to a request, through the
batch route of a real `arkfs serve` (xet-core's `GET /v1/reconstructions?file_id=...`),
and file by file from a server that has no such route or sends a damaged batch; their
bytes come several files to a xorb range. The tree written is the source tree either
way, and a flipped byte fails the get with one line. fsspec's cat of a list and get of
a directory ask the same way."""

import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import fsspec
import httpx
import pytest

from arkfs import download
from arkfs.api import Client
from arkfs.archive.manifest import Kind
from arkfs.mount.data import map_loader
from arkfs.mount.data.map_loader import BATCHES_AT_ONCE
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import BATCH_FILES
from tests.support.archive import bound, publish
from tests.support.cli import run_arkfs
from tests.support.faults import fault_proxy
from tests.support.server import arkfs_server

ARK = "ark:12345/x8many"
TOKEN = "many-read-token-51e2"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FILES = 2 * BATCH_FILES + 30  # non-empty files: three batches


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """The source tree (FILES small files in seven directories, and an empty one), its
    embedded store, and the URL of `arkfs serve` of that store."""
    base = tmp_path_factory.mktemp("many")
    tree = base / "tree"
    rng = random.Random(31)
    for i in range(FILES):
        path = tree / f"d{i % 7}" / f"f{i:03d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rng.randbytes(rng.randint(1, 5000)))
    (tree / "empty").write_bytes(b"")
    publish(tree, ARK, "--store", str(base / "store"))
    (base / "tokens").write_text(f"{TOKEN} read\n")
    with arkfs_server(base / "store", "--tokens", str(base / "tokens")) as (url, _):
        yield tree, base / "store", url


def stats(url: str) -> dict[str, int]:
    reply = httpx.get(f"{url}/v1/stats", headers=AUTH)
    reply.raise_for_status()
    counts: dict[str, int] = reply.json()
    return counts


def get_all(url: str, dest: Path) -> None:
    """`arkfs get` of the whole archive from url into dest, cache empty; dest is then the
    source tree, as `diff -r` sees it."""
    done = run_arkfs(
        "get", ARK, str(dest), "--server", url, "--token", TOKEN, "--no-cache", "-q"
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def same(dest: Path, tree: Path) -> None:
    diff = subprocess.run(["diff", "-r", str(dest), str(tree)], capture_output=True, text=True)
    assert diff.returncode == 0, diff.stdout


def test_the_batch_route_answers_what_each_files_route_does(
    many: tuple[Path, Path, str],
) -> None:
    _, store, url = many
    manifest, _ = bound(store, ARK)
    names = [
        hash_to_string(e.xet_hash)
        for e in manifest.entries
        if e.kind == Kind.FILE and e.xet_hash is not None and e.size
    ][:3]
    unknown = "ab" * 32
    with httpx.Client(base_url=url, headers=AUTH) as http:
        batch = http.get("/v1/reconstructions", params=[("file_id", n) for n in [*names, unknown]])
        assert batch.status_code == 200, batch.text
        body = batch.json()
        assert sorted(body["files"]) == sorted(names)  # the file it does not hold is left out
        for name in names:
            one = http.get(f"/v1/reconstructions/{name}").json()
            assert body["files"][name] == one["terms"]
            for xorb, ranges in one["fetch_info"].items():
                spans = [(r["range"], r["url_range"]) for r in body["fetch_info"][xorb]]
                assert all((r["range"], r["url_range"]) in spans for r in ranges)
        too_many = "&".join([f"file_id={names[0]}"] * (BATCH_FILES + 1))
        for query in (too_many, "file_id=zz", ""):
            assert http.get(f"/v1/reconstructions?{query}").status_code == 400
    assert httpx.get(f"{url}/v1/reconstructions", params={"file_id": names[0]}).status_code == 401


def test_a_get_of_many_files_asks_for_a_hundred_maps_at_a_time(
    many: tuple[Path, Path, str], tmp_path: Path
) -> None:
    tree, _, url = many
    before = stats(url)
    get_all(url, tmp_path / "got")
    after = stats(url)
    same(tmp_path / "got", tree)
    assert after["batch_reconstructions"] - before["batch_reconstructions"] == 3
    # every file's reconstruction came in a batch: none was asked for alone
    assert after["reconstructions"] - before["reconstructions"] == FILES
    # the files' bytes came along with each other's, a few xorb ranges for them all
    ranges = after["xorb_requests"] - before["xorb_requests"]
    assert ranges <= FILES // 10, ranges


@pytest.mark.parametrize("mode", ["404", "flip"])
def test_without_a_batch_route_or_with_a_damaged_batch_each_file_is_asked_alone(
    many: tuple[Path, Path, str], tmp_path: Path, mode: str
) -> None:
    tree, _, url = many
    with fault_proxy(url) as proxy:
        proxy.inject(mode, "batch")
        get_all(proxy.url, tmp_path / "got")
        seen = proxy.seen
    same(tmp_path / "got", tree)
    if mode == "404":  # a server without the route is not asked again, but for each file
        assert 1 <= seen["batch"] <= BATCHES_AT_ONCE
        assert seen["reconstruction"] == FILES
    else:  # where the flip fell decides which files are asked alone
        assert seen["batch"] == 3


def test_a_flipped_byte_in_a_range_of_many_files_fails_the_get_and_writes_no_wrong_file(
    many: tuple[Path, Path, str], tmp_path: Path
) -> None:
    tree, _, url = many
    with fault_proxy(url) as proxy:
        proxy.inject("flip", "xorb")
        done = run_arkfs(
            "get", ARK, str(tmp_path / "got"), "--server", proxy.url, "--token", TOKEN,
            "--no-cache", "-q",
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and "fails verification" in done.stderr, done.stderr
    written = [p for p in (tmp_path / "got").rglob("*") if p.is_file()]
    for path in written:  # what a get leaves under a final name is right, or not there
        if ".arkfs-part" not in path.name:
            assert path.read_bytes() == (tree / path.relative_to(tmp_path / "got")).read_bytes()


def test_maps_are_asked_for_a_window_ahead_of_the_files_being_written(
    many: tuple[Path, Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, _, url = many
    monkeypatch.setattr(map_loader, "WINDOW", 40)  # five windows of 40 files, one of 30
    before = stats(url)
    with Client(server=url, token=TOKEN, cache_size=0, cache_dir=tmp_path / "cache") as client:
        download.get(client, ARK, tmp_path / "got", download.GetProgress(), jobs=4)
    after = stats(url)
    same(tmp_path / "got", tree)
    assert after["batch_reconstructions"] - before["batch_reconstructions"] == 6  # one a window
    assert after["reconstructions"] - before["reconstructions"] == FILES


def ark_paths(tree: Path) -> list[str]:
    """The ark:// path of every file of the source tree, in path order."""
    naan_name = ARK.removeprefix("ark:")
    return [f"ark://{naan_name}/{p.relative_to(tree)}" for p in sorted(tree.rglob("*.bin"))]


def test_fsspec_cat_of_many_files_asks_for_their_maps_in_batches(
    many: tuple[Path, Path, str], tmp_path: Path
) -> None:
    tree, _, url = many
    paths = ark_paths(tree)
    fs = fsspec.filesystem("ark", server=url, token=TOKEN, cache_dir=tmp_path / "cache",
                           skip_instance_cache=True)  # fmt: skip
    before = stats(url)
    got = fs.cat(paths)
    after = stats(url)
    assert len(got) == FILES
    for path, data in got.items():
        assert data == (tree / path.split("/", 2)[2]).read_bytes(), path
    assert after["batch_reconstructions"] - before["batch_reconstructions"] == 3
    assert after["reconstructions"] - before["reconstructions"] == FILES  # none alone
    assert after["xorb_requests"] - before["xorb_requests"] <= FILES // 10


def test_fsspec_get_of_a_directory_asks_for_its_maps_in_a_batch(
    many: tuple[Path, Path, str], tmp_path: Path
) -> None:
    tree, _, url = many
    fs = fsspec.filesystem("ark", server=url, token=TOKEN, cache_dir=tmp_path / "cache",
                           skip_instance_cache=True)  # fmt: skip
    before = stats(url)
    fs.get(f"ark://{ARK.removeprefix('ark:')}/d3", str(tmp_path / "d3"), recursive=True)
    after = stats(url)
    same(tmp_path / "d3", tree / "d3")
    wanted = len(list((tree / "d3").iterdir()))
    assert after["batch_reconstructions"] - before["batch_reconstructions"] == 1
    assert after["reconstructions"] - before["reconstructions"] == wanted


@pytest.mark.parametrize("routes", ["both", "one"])
def test_a_get_through_mirrors_asks_the_mirrors_for_batches_in_turn(
    many: tuple[Path, Path, str], tmp_path: Path, routes: str
) -> None:
    tree, store, url = many
    with (
        arkfs_server(store, "--tokens", str(store.parent / "tokens")) as (other, _),
        fault_proxy(url) as proxy,
    ):
        if routes == "one":  # the first mirror has no batch route: the other answers them
            proxy.inject("404", "batch")
        config = tmp_path / "config.toml"
        config.write_text(
            f"[naans]\n12345 = ['{proxy.url}', '{other}']\n"
            f"[tokens]\n'{proxy.url}' = '{TOKEN}'\n'{other}' = '{TOKEN}'\n"
        )
        before = [stats(url), stats(other)]
        done = run_arkfs("get", ARK, str(tmp_path / "got"), "--config", str(config),
                         "--no-cache", "-q")  # fmt: skip
        assert done.returncode == 0, done.stderr
        after = [stats(url), stats(other)]
    same(tmp_path / "got", tree)
    batches = [
        a["batch_reconstructions"] - b["batch_reconstructions"]
        for a, b in zip(after, before, strict=True)
    ]
    files = sum(
        a["reconstructions"] - b["reconstructions"] for a, b in zip(after, before, strict=True)
    )
    hedged = sum(batches) - 3  # a batch slower than HEDGE_AFTER is asked of both
    assert hedged >= 0, batches
    if routes == "both":
        assert all(batches), batches  # rotated over both mirrors
    else:
        assert batches[0] == 0 and batches[1] >= 3, batches
    # Each file's reconstruction once (twice for a hedged batch's), in batches; a mirror
    # asked for a xorb range it gave no URL for asks for one file's alone, to learn one.
    ranges = sum(
        a["xorb_requests"] - b["xorb_requests"] for a, b in zip(after, before, strict=True)
    )
    assert 0 <= files - FILES - hedged * BATCH_FILES <= ranges <= FILES // 10
