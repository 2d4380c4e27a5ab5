"""The `ark://` fsspec filesystem: pandas, pyarrow, zarr, xarray and Dask read archives.

Registered through the `fsspec.specs` entry point (pyproject.toml). Paths are
`ark://NAAN/Name[/@vN][/path]`; storage_options are the Client's settings (server, token
or token_file, store, cache_dir, registry, ...). Everything is done by arkfs.api's Client,
so reads are verified exactly as in the mount, and a random read fetches only the chunks
that hold its bytes. As in the mount, `ark://` lists the NAANs and `ark://NAAN` the
archives bound under it. Every call that would write raises PermissionError. A worker
forked from a process that used the filesystem (a DataLoader's) reads through it too: its
Client starts a thread of its own there (arkfs.api).
"""

import io
from datetime import UTC, datetime
from typing import Any, NoReturn

from fsspec.callbacks import DEFAULT_CALLBACK
from fsspec.spec import AbstractFileSystem

from arkfs.api import ArkFile, Client, Resolved
from arkfs.archive.manifest import Kind

PROTOCOL = "ark"


class ArkFileSystem(AbstractFileSystem):  # type: ignore[misc]  # fsspec has no types
    """Read-only archives by ARK, through one arkfs Client per set of storage_options."""

    protocol = PROTOCOL
    root_marker = ""

    def __init__(self, *args: Any, **storage_options: Any) -> None:
        super().__init__(*args, **storage_options)
        settings = {k: v for k, v in storage_options.items() if k in _SETTINGS}
        self.client = Client(**settings)

    @classmethod
    def _strip_protocol(cls, path: str | list[str]) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        for prefix in ("ark://", "ark:/", "ark:"):
            if path.startswith(prefix):
                path = path[len(prefix) :]
                break
        return path.strip("/")

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        path = self._strip_protocol(path)
        if "/" not in path:  # the top, or a NAAN: directories of NAANs, or of archives
            under = self.client.names(path) if path else self.client.naans()
            if path and not under and path not in self.client.naans():
                raise FileNotFoundError(f"ark:{path}/ has no archive here")
            items = [_directory(f"{path}/{n}" if path else n) for n in under]
            return items if detail else [i["name"] for i in items]
        found = self.client.resolve(path)
        if found.entry is not None and found.entry.kind != Kind.DIR:
            items = [_details(path, found)]
        else:
            items = [
                _details(f"{path}/{r.path.rpartition('/')[2]}", r)
                for r in self.client.listdir(path)
            ]
        return items if detail else [i["name"] for i in items]

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        path = self._strip_protocol(path)
        if "/" not in path:
            self.ls(path)  # FileNotFoundError for a NAAN with nothing here
            return _directory(path)
        return _details(path, self.client.resolve(path))

    def modified(self, path: str) -> datetime:
        """When the file or directory was last modified, as published (an archive's top: its
        root directory's, as the mount shows it)."""
        found = self.client.resolve(self._strip_protocol(path))
        return datetime.fromtimestamp(found.top.mtime_ns / 1e9, UTC)

    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any
    ) -> bytes:
        with self.client.open(self._strip_protocol(path)) as f:
            size = f.raw.size
            lo = 0 if start is None else (start if start >= 0 else max(size + start, 0))
            hi = size if end is None else (end if end >= 0 else max(size + end, 0))
            return bytes(f.raw.pread(lo, max(hi - lo, 0))) if hi > lo else b""

    def cat(
        self, path: Any, recursive: bool = False, on_error: str = "raise", **kwargs: Any
    ) -> Any:
        self._preload(self.expand_path(path, recursive=recursive, **kwargs))
        return super().cat(path, recursive=recursive, on_error=on_error, **kwargs)

    def cat_ranges(self, paths: list[str], *args: Any, **kwargs: Any) -> list[Any]:
        self._preload(list(dict.fromkeys(paths)) if isinstance(paths, list) else [])
        return super().cat_ranges(paths, *args, **kwargs)  # type: ignore[no-any-return]

    def get(
        self,
        rpath: Any,
        lpath: Any,
        recursive: bool = False,
        callback: Any = DEFAULT_CALLBACK,
        maxdepth: int | None = None,
        **kwargs: Any,
    ) -> Any:
        if isinstance(rpath, list) and isinstance(lpath, list):  # fsspec takes them as they are
            self._preload(rpath)
        else:
            self._preload(self.expand_path(rpath, recursive=recursive, maxdepth=maxdepth, **kwargs))
        return super().get(rpath, lpath, recursive, callback, maxdepth, **kwargs)

    def _preload(self, paths: list[str]) -> None:
        """Ask for the maps of the files of paths, read next in that order, many to a
        request where the server allows (Client.preload_files): a cat of a list of 1,000
        small files, or a get of their directory, had asked once per file."""
        if len(paths) > 1:
            self.client.preload_files([self._strip_protocol(p) for p in paths])

    def _open(self, path: str, mode: str = "rb", **kwargs: Any) -> "io.BufferedReader[ArkFile]":
        if mode != "rb":
            raise PermissionError(f"ark:// is read-only: mode {mode!r}")
        return self.client.open(self._strip_protocol(path))

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise PermissionError("ark:// is read-only: archives change only by `arkfs publish`")

    rm = _rm = rm_file = rmdir = mkdir = makedirs = mv = cp_file = _refuse
    put_file = pipe_file = touch = _refuse

    def ukey(self, path: str) -> str:
        found = self.client.resolve(self._strip_protocol(path))
        entry = found.entry
        return entry.xet_hash.hex() if entry is not None and entry.xet_hash else found.ark


_SETTINGS = frozenset(
    {"server", "store", "token", "token_file", "cache_dir", "cache_size", "registry",
     "fallback", "allow_private", "config", "metadata_ttl"}
)  # fmt: skip


def _directory(name: str) -> dict[str, Any]:
    """fsspec's info dict of a NAAN or an archive, as a listing of the level above gives it."""
    return {"name": name, "type": "directory", "size": 0}


_TYPES = {Kind.DIR: "directory", Kind.FILE: "file"}  # fsspec's types; anything else is "other"


def _details(name: str, found: Resolved) -> dict[str, Any]:
    """fsspec's info dict of an entry (the archive's root directory when found has none)."""
    entry = found.top
    out: dict[str, Any] = {"name": name, "type": _TYPES.get(entry.kind, "other")}
    out |= {"size": entry.size, "mode": entry.mode, "mtime": entry.mtime_ns / 1e9, "ark": found.ark}
    if entry.xet_hash is not None:
        out["xet_hash"] = entry.xet_hash.hex()
    return out
