"""A mount that knows only NAAN registries: archives found through a NAAN record behind a
redirect hop and through a shoulder record, each server reached with its own token."""

import errno
import gzip
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.archive import make_tree, publish
from tests.support.cli import run_arkfs
from tests.support.mount import arkfs_mount
from tests.support.objects import Obj, Objects, object_server
from tests.support.redirector import Redirector, redirector
from tests.support.server import arkfs_server

SNAPSHOT = Path(__file__).parents[1] / "data/naan_records.json.gz"
NAAN = "12025"  # the snapshot's record for it is pointed at 127.0.0.1
BY_NAAN = f"ark:{NAAN}/b6np1"  # on server A, through the redirector
BY_SHOULDER = f"ark:{NAAN}/x7zz"  # on server B, through a shoulder record (A has another)
WEB_NAAN = "12148"  # its record is pointed at a plain HTTP server
PAGE = f"ark:{WEB_NAAN}/page"
PAGE_BYTES = b"<html><body>a landing page</body></html>\n"
PAGE_ERC = "erc:\nwho: Web Lab\nwhat: A landing page\nwhen: 2024\nwhere: ark:/12148/page\n"


@dataclass(frozen=True)
class World:
    a: str
    b: str
    n2t: Redirector
    web: Objects
    tree: Path
    other: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("discovery")
    (base / "a.tokens").write_text("writer-a write\ntoken-a read\n")
    (base / "b.tokens").write_text("writer-b write\ntoken-b read\n")
    tree = make_tree(base / "tree")
    other = base / "other"
    other.mkdir()
    (other / "readme.txt").write_text("the shoulder's own archive\n")
    with (
        arkfs_server(base / "a", "--tokens", str(base / "a.tokens")) as (a, _),
        arkfs_server(base / "b", "--tokens", str(base / "b.tokens")) as (b, _),
        redirector() as n2t,
        object_server() as web,
    ):
        web.objects[f"/{PAGE}"] = Obj(PAGE_BYTES, ranges=False, digest=None, info=PAGE_ERC)
        publish(tree, BY_NAAN, "--server", a, "--token", "writer-a")
        publish(tree, BY_SHOULDER, "--server", a, "--token", "writer-a")
        publish(other, BY_SHOULDER, "--server", b, "--token", "writer-b")
        n2t.redirect("/ark:", f"{a}/ark:")
        yield World(a, b, n2t, web, tree, other)


def json_registry(path: Path, w: World) -> Path:
    """The public snapshot, with NAAN's record and a new shoulder record on 127.0.0.1."""
    data = json.loads(gzip.decompress(SNAPSHOT.read_bytes()))
    for record in data["data"]:
        if record.get("what") == NAAN:
            record["target"]["url"] = w.n2t.url + "/ark:/${content}"
        if record.get("what") == WEB_NAAN:
            record["target"]["url"] = w.web.url + "/ark:${content}"
    shoulder = {"rtype": "PublicNAANShoulder", "naan": NAAN, "shoulder": "x7"}
    data["data"].append({**shoulder, "what": f"{NAAN}/x7", "target": {"url": w.b + "/${pid}"}})
    path.write_text(json.dumps(data))
    return path


def anvl_registry(path: Path, w: World) -> Path:
    path.write_text(
        "# NAAN registry, ANVL form\n\n"
        f"naa:\nwho: Lab\nwhat: {NAAN}\nwhere: {w.n2t.url}\n\n"
        f"naa:\nwho: Shoulder lab\nwhat: {NAAN}/x7\nwhere: {w.b}/\n\n"
        f"naa:\nwho: Web Lab\nwhat: {WEB_NAAN}\nwhere: {w.web.url}\n"
    )
    return path


@pytest.mark.slow
@pytest.mark.parametrize("form", [json_registry, anvl_registry])
def test_a_mount_given_only_a_registry_finds_archives_and_plain_objects(
    world: World, form: object, tmp_path: Path
) -> None:
    registry = form(tmp_path / "registry", world)  # type: ignore[operator]
    (tmp_path / "b.token").write_text("token-b\n")
    config = tmp_path / "config.toml"
    config.write_text(
        f"fallback = false\n[tokens]\n'{world.a}' = 'token-a'\n'{world.b}' = {{file = 'b.token'}}\n"
    )
    args = (
        "--registry",
        str(registry),
        "--config",
        str(config),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    world.n2t.seen.clear()
    with arkfs_mount(tmp_path / "mnt", *args) as m:
        root = m.path / BY_NAAN
        assert "readme.txt" in subprocess.run(["ls", root], capture_output=True, text=True).stdout
        subprocess.run(["cp", "-r", str(root), str(tmp_path / "copy")], check=True)
        assert (
            subprocess.run(["diff", "-r", str(world.tree), str(tmp_path / "copy")]).returncode == 0
        )
        by_shoulder = (m.path / BY_SHOULDER / "readme.txt").read_text()
        assert by_shoulder == "the shoulder's own archive\n"
        assert not (m.path / f"ark:{NAAN}/b6nothere").exists()
        page = m.path / PAGE  # a plain HTTP object: a read-only file
        assert subprocess.run(["cat", str(page)], capture_output=True).stdout == PAGE_BYTES
        attrs = subprocess.run(["getfattr", "-d", str(page)], capture_output=True, text=True)
        assert 'user.ark.who="Web Lab"' in attrs.stdout
        assert f'user.ark.url="{world.web.url}/{PAGE}"' in attrs.stdout
    assert world.n2t.seen, "the NAAN record's redirect hop was not used"
    assert world.n2t.auth_seen() == {None}  # no token for the redirector's origin


def resolver_args(world: World, tmp_path: Path) -> tuple[str, ...]:
    config = tmp_path / "config.toml"
    config.write_text(
        f"fallback = false\n[tokens]\n'{world.a}' = 'token-a'\n'{world.b}' = 'token-b'\n"
    )
    registry = json_registry(tmp_path / "registry.json", world)
    return ("--registry", str(registry), "--config", str(config), "--cache-dir", str(tmp_path))


def test_arkfs_resolve_traces_a_naan_record_through_its_redirect_hop(
    world: World, tmp_path: Path
) -> None:
    done = run_arkfs("resolve", BY_NAAN, "--json", *resolver_args(world, tmp_path))
    assert done.returncode == 0, done.stderr
    trace = json.loads(done.stdout)
    assert trace["record"]["kind"] == "naan" and trace["record"]["naan"] == NAAN
    assert [(h["url"].split("/ark:")[0], h["status"]) for h in trace["hops"]] == [
        (world.n2t.url, 302),
        (world.a, 200),
    ]
    assert trace["responder"] == world.a and trace["service_path"] == "/"
    assert trace["service"] == world.a and "who: Lab of Sines" in trace["info"]


def test_arkfs_resolve_traces_a_shoulder_record(world: World, tmp_path: Path) -> None:
    done = run_arkfs("resolve", BY_SHOULDER, *resolver_args(world, tmp_path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{BY_SHOULDER}: shoulder record {NAAN}/x7 in ")
    assert f"  200 {world.b}/{BY_SHOULDER}" in lines
    assert f"responder {world.b}" in lines
    assert "  what: Sine tables" in lines


def test_arkfs_resolve_failures_are_one_line(world: World, tmp_path: Path) -> None:
    args = resolver_args(world, tmp_path)
    bad = run_arkfs("resolve", "ark:12345", *args)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    unknown = run_arkfs("resolve", "ark:b9999/x", *args)
    assert unknown.returncode == 1 and unknown.stderr.count("\n") == 1, unknown.stderr
    assert "no NAAN registry has a record for b9999" in unknown.stderr


def test_arkfs_resolve_traces_a_plain_object(world: World, tmp_path: Path) -> None:
    done = run_arkfs("resolve", PAGE, "--json", *resolver_args(world, tmp_path))
    assert done.returncode == 0, done.stderr
    trace = json.loads(done.stdout)
    assert trace["record"]["naan"] == WEB_NAAN and not trace["arkfs"]
    assert trace["hops"] == [{"url": f"{world.web.url}/{PAGE}", "status": 200}]
    assert "who: Web Lab" in trace["info"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--registry", "missing.json"), "cannot read the NAAN registry"),
        (("--registry", "empty.json"), "holds no NAAN record"),
        (("--fallback", "n2t.net"), "is not an http(s) URL or off"),
    ],
)
def test_mount_refuses_bad_registries_and_fallbacks(
    tmp_path: Path, args: tuple[str, ...], words: str
) -> None:
    (tmp_path / "mnt").mkdir()
    (tmp_path / "empty.json").write_text("[]")
    done = run_arkfs(
        "mount", str(tmp_path / "mnt"), "--cache-dir", str(tmp_path / "c"),
        *(a if not a.endswith(".json") else str(tmp_path / a) for a in args),
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert words in done.stderr


def test_token_is_for_the_server_urls_only_and_the_refusal_says_so(
    world: World, tmp_path: Path
) -> None:
    (tmp_path / "mnt").mkdir()
    config = tmp_path / "config.toml"
    config.write_text(f"servers = ['{world.a}']\n")
    args = ("--config", str(config), "--token", "token-a", "--cache-dir", str(tmp_path / "c"))
    done = run_arkfs("mount", str(tmp_path / "mnt"), *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "takes its token from [tokens]" in done.stderr
    config.write_text(f"servers = ['{world.a}']\n[tokens]\n'{world.a}' = 'token-a'\n")
    with arkfs_mount(
        tmp_path / "mnt", "--config", str(config), "--cache-dir", str(tmp_path / "c")
    ) as m:
        assert (m.path / BY_NAAN / "readme.txt").read_text() == "hello, archive\n"


def test_private_destinations_are_refused_unless_allowed(world: World, tmp_path: Path) -> None:
    args = resolver_args(world, tmp_path)
    world.n2t.seen.clear()
    refused = run_arkfs("resolve", BY_NAAN, *args, allow_private=False)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert "registry's target leads to http://127.0.0.1" in refused.stderr
    assert "allow_private" in refused.stderr and not refused.stdout
    assert world.n2t.seen == []
    config = Path(args[args.index("--config") + 1])
    config.write_text("allow_private = true\n" + config.read_text())
    assert run_arkfs("resolve", BY_NAAN, *args, allow_private=False).returncode == 0
    with arkfs_mount(tmp_path / "mnt", *args, "--allow-private", allow_private=False) as m:
        assert (m.path / BY_NAAN / "readme.txt").read_text() == "hello, archive\n"


def test_a_mount_refuses_a_redirect_to_a_private_address_in_one_log_line(
    world: World, tmp_path: Path
) -> None:
    # The fallback is configured, so trusted; its redirect to server A is not.
    args = ("--fallback", world.n2t.url, "--cache-dir", str(tmp_path / "c"))
    with arkfs_mount(tmp_path / "mnt", *args, allow_private=False) as m:
        with pytest.raises(OSError) as caught:
            (m.path / BY_NAAN).stat()
        assert caught.value.errno in (errno.EIO, errno.ENOENT)
        log = m.log.read_text()
    refusals = [line for line in log.splitlines() if "non-public address" in line]
    assert len(refusals) == 1, log
    assert "a redirect leads to" in refusals[0] and "Traceback" not in log


def test_arkfs_resolve_a_404_from_the_last_resolver_is_exit_1(world: World, tmp_path: Path) -> None:
    done = run_arkfs("resolve", f"ark:{NAAN}/b6nothere", *resolver_args(world, tmp_path))
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"the last resolver, {world.a}, answered 404" in done.stderr
    assert "ARK service" not in done.stdout + done.stderr


def test_arkfs_resolve_of_an_inflected_ark_passes_the_inflection_along(
    world: World, tmp_path: Path
) -> None:
    done = run_arkfs("resolve", f"{BY_NAAN}?info", "--json", *resolver_args(world, tmp_path))
    assert done.returncode == 0, done.stderr
    trace = json.loads(done.stdout)
    assert [h["url"].endswith("?info") for h in trace["hops"]] == [True, True]
    assert "who: Lab of Sines" in trace["info"]


def test_arkfs_resolve_of_an_unknown_template_variable_is_one_line(tmp_path: Path) -> None:
    registry = tmp_path / "r.json"
    registry.write_text(json.dumps([{"what": "b1234", "target": {"url": "http://h/$id"}}]))
    done = run_arkfs("resolve", "ark:b1234/x", "--registry", str(registry), "--fallback", "off")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "unknown variable ${id}" in done.stderr


DEEP = "[" * 100_000 + "]" * 100_000  # parsed naively, a RecursionError


def test_arkfs_resolve_of_a_malformed_registry_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text(DEEP)
    done = run_arkfs("resolve", "ark:b1234/x", "--registry", str(tmp_path / "deep.json"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "nested too deeply" in done.stderr and "Traceback" not in done.stderr
    with redirector() as host:
        host.pages["/deep.json"] = DEEP
        args = ("--registry", f"{host.url}/deep.json", "--fallback", "off")
        done = run_arkfs("resolve", "ark:b1234/x", *args, "--cache-dir", str(tmp_path))
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "nested too deeply" in done.stderr


def test_a_mount_logs_a_malformed_registry_once_and_does_not_refetch_it_per_lookup(
    tmp_path: Path,
) -> None:
    with redirector() as host:
        host.pages["/deep.json"] = DEEP
        args = ("--registry", f"{host.url}/deep.json", "--fallback", "off")
        with arkfs_mount(tmp_path / "mnt", *args, "--cache-dir", str(tmp_path / "c")) as m:
            for name in ("a", "b", "c"):
                with pytest.raises(OSError) as caught:
                    (m.path / f"ark:b1234/{name}").stat()
                assert caught.value.errno in (errno.EIO, errno.ENOENT)
            log = m.log.read_text()
        assert [s.path for s in host.seen] == ["/deep.json"]
    assert 1 <= sum("nested too deeply" in line for line in log.splitlines()) <= 3, log
    assert "Traceback" not in log and "RecursionError" not in log


def test_an_archive_found_through_a_registry_has_its_url(world: World, tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    args = resolver_args(world, tmp_path / "r")
    with arkfs_mount(tmp_path / "mnt", *args[:-2], "--cache-dir", str(tmp_path / "c")) as m:
        root = m.path / BY_NAAN
        assert (root / "readme.txt").read_text() == "hello, archive\n"
        assert os.getxattr(root, "user.ark.url") == f"{world.a}/ark:/{BY_NAAN[4:]}".encode()


def test_an_info_reply_that_is_no_record_is_not_kept_as_one(world: World, tmp_path: Path) -> None:
    landing = f"ark:{WEB_NAAN}/htmlinfo"
    html = "<!doctype html><html><body>a landing page, not a record</body></html>"
    world.web.objects[f"/{landing}"] = Obj(PAGE_BYTES, ranges=False, digest=None, info=html)
    (tmp_path / "r").mkdir()
    args = resolver_args(world, tmp_path / "r")
    with arkfs_mount(tmp_path / "mnt", *args[:-2], "--cache-dir", str(tmp_path / "c")) as m:
        page = m.path / landing
        assert page.read_bytes() == PAGE_BYTES
        names = os.listxattr(page)
        assert "user.ark.url" in names and "user.ark.info" not in names, names
        assert not any(html.encode() in os.getxattr(page, n) for n in names)
    done = run_arkfs("resolve", landing, *args)
    assert done.returncode == 0, done.stderr
    assert "  no metadata from this resolver" in done.stdout.splitlines()
