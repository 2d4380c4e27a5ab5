"""open_backend and default_store_dir: which backend a command gets, and clear refusals."""

import random
import re
from pathlib import Path

import pytest
import trio

from arkfs.backend.base import Backend, BackendError, Unauthorized
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.backend.open import default_store_dir, open_backend
from arkfs.backend.remote import RemoteBackend
from tests.backend.content import build_content, upload
from tests.support.server import arkfs_server


def test_default_store_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ARKFS_STORE", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert default_store_dir() == tmp_path / "home/.local/share/arkfs/store"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/ignored")
    assert default_store_dir() == tmp_path / "home/.local/share/arkfs/store"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_store_dir() == tmp_path / "xdg/arkfs/store"
    monkeypatch.setenv("ARKFS_STORE", str(tmp_path / "explicit"))
    assert default_store_dir() == tmp_path / "explicit"


def close(backend: Backend) -> None:
    trio.run(backend.aclose)


def test_embedded_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(BackendError, match=re.escape(f"no arkfs store at {missing}")):
        open_backend(None, missing, None, create=False)
    assert not missing.exists()
    backend = open_backend(None, missing, None, create=True)
    assert isinstance(backend, EmbeddedBackend) and backend.name == f"embedded:{missing}"
    close(backend)
    monkeypatch.setenv("ARKFS_STORE", str(missing))
    backend = open_backend(None, None, None, create=False)
    assert backend.name == f"embedded:{missing}"
    close(backend)


def test_refusals(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="not both"):
        open_backend("http://127.0.0.1:8080", tmp_path, None, create=False)
    for bad in ("localhost:8080", "ftp://example.org", "http://"):
        with pytest.raises(BackendError, match="http://"):
            open_backend(bad, None, None, create=False)
    (tmp_path / "foreign.txt").write_text("not a store")
    with pytest.raises(BackendError, match=re.escape("foreign.txt")):
        open_backend(None, tmp_path, None, create=True)


def test_server_with_token_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "tokens").write_text("writer write\n")
    content = build_content({"f": random.Random(6).randbytes(50_000)})
    with arkfs_server(tmp_path / "store", "--tokens", str(tmp_path / "tokens")) as (url, _):
        monkeypatch.delenv("ARKFS_TOKEN", raising=False)
        backend = open_backend(url, None, None, create=False)
        assert isinstance(backend, RemoteBackend) and backend.name == url

        async def refused() -> None:
            with pytest.raises(Unauthorized):
                await upload(backend, content)
            await backend.aclose()

        trio.run(refused)
        monkeypatch.setenv("ARKFS_TOKEN", "writer")
        backend = open_backend(url, None, None, create=False)

        async def accepted() -> None:
            await upload(backend, content)
            await backend.aclose()

        trio.run(accepted)
