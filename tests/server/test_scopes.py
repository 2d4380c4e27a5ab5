"""Permissions as EZID grants them: shoulder-bound write tokens, admin, and the NAANs a
server is authoritative for (issue 27)."""

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arkfs.ark.normalization import parse
from arkfs.server.auth import (
    Authorizer,
    OutsideShoulders,
    Scope,
    TokensFileError,
    parse_grants,
)
from tests.support.archive import make_tree
from tests.support.cli import ARKFS
from tests.support.server import arkfs_server

TOKENS = """\
r3ader read
r0bot write
d3pt write:99999/x6 write:88888/b2
n4an write:77777
b0ss admin
"""


def _publish(url: str, tree: Path, ark: str, token: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ARKFS_TOKEN"}
    return subprocess.run(
        [ARKFS, "publish", str(tree), "--ark", ark, "--server", url, "--token", token,
         "--who", "W", "--what", "T"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("scopes")
    (root / "tokens").write_text(TOKENS)
    tree = make_tree(root / "tree")
    naans = ("--naan", "99999", "--naan", "88888", "--naan", "77777")
    with arkfs_server(root / "store", "--tokens", str(root / "tokens"), *naans) as (url, _):
        yield url, tree


@pytest.mark.parametrize(
    ("token", "ark"),
    [
        ("d3pt", "ark:99999/x6ab1"),
        ("d3pt", "ark:88888/b2cd"),
        ("n4an", "ark:77777/q9zz"),
        ("r0bot", "ark:99999/f5plain"),
        ("b0ss", "ark:88888/k4boss"),
    ],
)
def test_a_token_binds_under_its_shoulders(served: tuple[str, Path], token: str, ark: str) -> None:
    url, tree = served
    done = _publish(url, tree, ark, token)
    assert done.returncode == 0, done.stderr
    assert httpx.get(f"{url}/{ark}?info", headers={"Authorization": "Bearer r3ader"}).is_success


@pytest.mark.parametrize(
    ("token", "ark", "shoulder"),
    [
        ("d3pt", "ark:99999/c7fake", "ark:99999/c7"),
        ("d3pt", "ark:77777/x6abc", "ark:77777/x6"),
        ("n4an", "ark:99999/x6abc", "ark:99999/x6"),
    ],
)
def test_a_bind_outside_the_tokens_shoulders_is_403_naming_the_shoulder(
    served: tuple[str, Path], token: str, ark: str, shoulder: str
) -> None:
    url, tree = served
    done = _publish(url, tree, ark, token)
    last = done.stderr.splitlines()[-1]  # after the progress lines: one error line
    assert done.returncode == 1 and last.startswith("arkfs: ") and shoulder in last, done.stderr
    reply = httpx.put(f"{url}/{ark}", content=b"", headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 403
    assert reply.headers["content-type"] == "application/json"
    assert reply.json()["shoulder"] == shoulder and reply.json()["ark"] == ark
    assert httpx.get(f"{url}/{ark}", headers={"Authorization": "Bearer r3ader"}).status_code == 404


@pytest.mark.parametrize("token", ["r0bot", "b0ss"])
def test_binding_outside_the_servers_naans_is_refused(served: tuple[str, Path], token: str) -> None:
    url, tree = served
    done = _publish(url, tree, "ark:13030/c7fake", token)  # CDL's real NAAN
    assert done.returncode == 1 and "13030" in done.stderr, done.stderr
    reply = httpx.put(
        f"{url}/ark:13030/c7fake", content=b"", headers={"Authorization": f"Bearer {token}"}
    )
    assert reply.status_code == 403 and reply.json()["shoulder"] == "ark:13030/c7"
    home = httpx.get(f"{url}/").text
    assert "13030" not in home and "77777 88888 99999" in home
    assert httpx.get(f"{url}/.well-known/ark").text == "/\n"


def test_a_derived_token_of_a_shoulder_bound_token_uploads_but_binds_nothing() -> None:
    tokens, shoulders = parse_grants(TOKENS)
    auth = Authorizer(tokens, shoulders=shoulders)
    assert auth.derived_scope("d3pt", "write") == "upload"
    assert auth.derived_scope("r0bot", "write") == "write"
    upload, _ = auth.issuer.issue(auth.derived_scope("d3pt", "write"))
    assert auth.require(f"Bearer {upload}", Scope.WRITE) == upload  # CAS uploads
    with pytest.raises(OutsideShoulders):
        auth.require_bind(f"Bearer {upload}", parse("ark:99999/x6ab1"))
    write, _ = auth.issuer.issue(auth.derived_scope("r0bot", "write"))
    auth.require_bind(f"Bearer {write}", parse("ark:12345/x6ab1"))


@pytest.mark.parametrize("line", ["t root", "t write:", "t read:99999/x6", "t write:9/ x"])
def test_a_malformed_scope_is_refused_naming_its_line(line: str) -> None:
    with pytest.raises(TokensFileError, match="line 2"):
        parse_grants(f"ok read\n{line}\n")


def test_scopes_combine_to_the_widest() -> None:
    tokens, shoulders = parse_grants("a read write:99999/x6\nb write:99999/x6 write\nc admin\n")
    assert tokens == {"a": Scope.WRITE, "b": Scope.WRITE, "c": Scope.ADMIN}
    assert set(shoulders) == {"a"}
