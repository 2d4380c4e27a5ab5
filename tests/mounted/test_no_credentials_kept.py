"""No credential kept (issue 23, item 8): the userinfo and signed query string of a URL an
ARK resolves to are in no log line, xattr, cache file or `arkfs resolve` output, though
the object is read through that very URL."""

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import run_arkfs
from tests.support.mount import arkfs_mount
from tests.support.objects import Obj, Objects, object_server
from tests.support.redirector import Redirector, redirector
from tests.support.secrets import leaks

NAAN = "b5555"
ARK = f"ark:{NAAN}/page"
DATA = b"<html><body>a signed landing page</body></html>\n"
SECRETS = ("pw-s3cret", "sig-s3cret", "cred-s3cret", "tok-s3cret")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Objects, Redirector, Path]]:
    with object_server() as objects, redirector() as n2t:
        objects.objects["/o/page"] = Obj(DATA, ranges=False, digest=None)
        signed = objects.url.replace("://", "://reader:pw-s3cret@") + (
            "/o/page?X-Amz-Signature=sig-s3cret&X-Amz-Credential=cred-s3cret&token=tok-s3cret"
        )
        n2t.redirect(f"/{ARK}", signed)
        registry = tmp_path / "registry.json"
        registry.write_text(json.dumps([{"what": NAAN, "target": {"url": n2t.url + "/${pid}"}}]))
        yield objects, n2t, registry


def secrets_in(text: str | bytes) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [s for s in SECRETS if s.encode() in data]


def test_signed_urls_and_userinfo_are_kept_nowhere(
    world: tuple[Objects, Redirector, Path], tmp_path: Path
) -> None:
    objects, _, registry = world
    cache = tmp_path / "c"
    args = ("--registry", str(registry), "--fallback", "off", "--cache-dir", str(cache))
    with arkfs_mount(tmp_path / "mnt", *args, "--log-level", "debug") as m:
        page = m.path / ARK
        assert page.read_bytes() == DATA  # read through the signed URL
        attrs = {name: os.getxattr(page, name) for name in os.listxattr(page)}
        assert attrs["user.ark.url"] == f"{objects.url}/o/page".encode()
        assert all(not secrets_in(v) for v in attrs.values()), attrs
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert any("objects" in p.parts for p in files)  # the object's record was written
    kept = {str(p): secrets_in(p.read_bytes()) for p in files}
    assert not any(kept.values()), kept
    assert leaks([m.log]) == []
    for form in ((), ("--json",)):
        done = run_arkfs("resolve", ARK, *form, *args)
        assert done.returncode == 0, done.stderr
        assert not secrets_in(done.stdout + done.stderr), done.stdout
        assert f"{objects.url}/o/page" in done.stdout
