"""The mount's config file: TOML, from --config, $ARKFS_CONFIG or config.toml under
arkfs's XDG config directory (~/.config/arkfs):

    servers = ["https://archive.example.org"]      # for every NAAN without its own entry
    store = "/srv/arkstore"                          # an embedded store, as --store
    metadata_ttl = 300                               # seconds, as --metadata-ttl
    [naans]
    12345 = "https://archive.example.org"
    b1234 = ["https://a.example.org", "https://b.example.org"]
"""

import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from arkfs.ark.errors import ArkError
from arkfs.ark.naan import check_naan
from arkfs.util.paths import config_dir

CONFIG_ENV = "ARKFS_CONFIG"


class ConfigError(Exception):
    """A config file or resolver setting the user must correct."""


@dataclass(frozen=True)
class ResolverConfig:
    """Where archives are resolved (servers for every NAAN, per-NAAN servers, a store), and
    how long the latest version of an archive is taken as known (None: the default)."""

    servers: tuple[str, ...] = ()
    naans: dict[str, tuple[str, ...]] = field(default_factory=dict)
    store: Path | None = None
    metadata_ttl: float | None = None


def default_config_path() -> Path:
    """$ARKFS_CONFIG, else config.toml in arkfs's XDG config directory."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    return config_dir() / "config.toml"


def _urls(value: object, where: str) -> tuple[str, ...]:
    urls = [value] if isinstance(value, str) else value
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        raise ConfigError(f"{where} must be a URL or a list of URLs")
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: {url!r} is not an http:// or https:// URL")
    return tuple(urls)


def load_config(path: Path, explicit: bool) -> ResolverConfig:
    """Read a config file; a missing file is an empty config unless it was named explicitly."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file {path} does not exist") from None
        return ResolverConfig()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
    unknown = sorted(set(data) - {"servers", "naans", "store", "metadata_ttl"})
    if unknown:
        raise ConfigError(
            f"config file {path}: unknown key {unknown[0]!r} (servers, naans, store, metadata_ttl)"
        )
    servers = _urls(data["servers"], f"{path}: servers") if "servers" in data else ()
    naans_table = data.get("naans", {})
    if not isinstance(naans_table, dict):
        raise ConfigError(f"config file {path}: [naans] must be a table of NAAN = URL(s)")
    naans = {}
    for key, value in naans_table.items():
        naan = key.lower()
        try:
            check_naan(naan)
        except ArkError as exc:
            raise ConfigError(f"config file {path}: [naans] {key}: {exc}") from None
        naans[naan] = _urls(value, f"{path}: [naans] {key}")
    store = data.get("store")
    if store is not None and not isinstance(store, str):
        raise ConfigError(f"config file {path}: store must be a directory path")
    # A relative store path is relative to the config file, wherever the mount runs.
    store_dir = path.parent.absolute() / Path(store).expanduser() if store else None
    ttl = data.get("metadata_ttl")
    if ttl is not None and (
        not isinstance(ttl, int | float) or isinstance(ttl, bool) or not 0 <= ttl < math.inf
    ):
        raise ConfigError(f"config file {path}: metadata_ttl must be a number of seconds >= 0")
    return ResolverConfig(servers, naans, store_dir, None if ttl is None else float(ttl))
