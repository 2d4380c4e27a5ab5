"""Which backend a command uses: a server URL, or an embedded store directory."""

import os
from pathlib import Path

from arkfs.backend.base import Backend, BackendError
from arkfs.store.errors import NotFound, StoreError
from arkfs.util.paths import data_dir


def default_store_dir() -> Path:
    """$ARKFS_STORE, else the store under arkfs's XDG data directory."""
    explicit = os.environ.get("ARKFS_STORE")
    return Path(explicit).expanduser() if explicit else data_dir() / "store"


class BadTarget(BackendError):
    """A server URL or store choice the user must correct (not a failure of the backend)."""


def open_backend(
    server: str | None, store: Path | None, token: str | None, *, create: bool
) -> Backend:
    """A RemoteBackend for server, else an EmbeddedBackend on store (or the default store).

    token falls back to $ARKFS_TOKEN; it is used with a server only. create allows making
    a new embedded store.
    """
    if server is not None and store is not None:
        raise BadTarget(
            "give either a server URL (--server) or a store directory (--store), not both"
        )
    if server is not None:  # httpx and the remote backend only then: 0.3 s of imports
        import httpx

        from arkfs.backend.remote import RemoteBackend

        try:
            url = httpx.URL(server)
        except httpx.InvalidURL:
            url = httpx.URL()
        if url.scheme not in ("http", "https") or not url.host:
            raise BadTarget(
                f"server {server!r} is not an http:// or https:// URL; "
                "give one like http://127.0.0.1:8080"
            )
        return RemoteBackend(server, token or os.environ.get("ARKFS_TOKEN") or None)
    # Loaded only for a store: a get from a server skips ~50 ms of imports (the store, the
    # archive service).
    from arkfs.backend.embedded import EmbeddedBackend
    from arkfs.store.local import LocalStore

    root = store if store is not None else default_store_dir()
    try:
        return EmbeddedBackend(LocalStore.open(root, create=create))
    except NotFound:
        raise BackendError(
            f"no arkfs store at {root}: publish into it first (`arkfs publish DIR --store "
            f"{root}`), or give --server URL"
        ) from None
    except StoreError as exc:
        raise BackendError(str(exc)) from None
    except OSError as exc:
        raise BackendError(f"cannot open the store at {root}: {exc.strerror or exc}") from None
