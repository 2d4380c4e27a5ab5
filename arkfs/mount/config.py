"""The mount's config file: TOML, from --config, $ARKFS_CONFIG or config.toml under
arkfs's XDG config directory (~/.config/arkfs):

    servers = ["https://archive.example.org"]      # for every NAAN without its own entry
    store = "/srv/arkstore"                          # an embedded store, as --store
    metadata_ttl = 300                               # seconds, as --metadata-ttl
    registry = ["naan_records.json", "https://example.org/naans.json"]  # as --registry
    fallback = "https://n2t.net/"                    # or false; as --fallback
    cache_dir = "/var/cache/arkfs"                   # and every other mount setting,
    cache_size = "20G"                               # named as its -o option:
    log = "/var/log/arkfs.log"                       # log_level, allow_other, allow_root,
    allow_other = true                               # uid, gid, umask ("027"), noexec,
    umask = "022"                                    # token_file, noxattr
    allow_private = false    # registry targets and redirects to private addresses (tests)
    proxies = ["http://squid1:3128", "http://squid2:3128", "DIRECT"]  # tried in order
    [naans]
    12345 = "https://archive.example.org"
    b1234 = ["https://a.example.org", "https://b.example.org"]  # mirrors
    [tokens]                                         # origin = token, or {file = PATH}
    "https://archive.example.org" = "s3cret"
    "https://a.example.org" = {file = "a.token"}

Relative paths (store, registry files, token files) are relative to the config file.
"""

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from arkfs.util.paths import config_dir
from arkfs.util.sizes import parse_size

# This module loads no HTTP client, resolver or ARK parser (they are imported where used): the
# command line's parsers read these defaults, and `arkfs mount --help` starts at once.
CONFIG_ENV = "ARKFS_CONFIG"
DEFAULT_FALLBACK = "https://n2t.net/"  # the resolver for NAANs no registry knows
DEFAULT_TTL = 300.0  # seconds the latest version of an archive is taken as known
LOG_LEVELS = ("debug", "info", "warning", "error")
PATH_SETTINGS = ("cache_dir", "log", "token_file")  # relative to the config file
FLAG_SETTINGS = ("allow_other", "allow_root", "noexec", "noxattr", "hide_xattrs", "allow_private")
ID_SETTINGS = ("uid", "gid")
SETTINGS = (*PATH_SETTINGS, *FLAG_SETTINGS, *ID_SETTINGS, "cache_size", "log_level", "umask")
KEYS = (
    "servers",
    "naans",
    "store",
    "metadata_ttl",
    "registry",
    "fallback",
    "tokens",
    "proxies",
    *SETTINGS,
)


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
    registries: tuple[str, ...] = ()  # file paths and URLs, earlier first
    fallback: str | bool | None = None  # a URL, False (off), None (unset: the default)
    tokens: dict[str, str] = field(default_factory=dict, repr=False)  # origin -> token
    settings: dict[str, object] = field(default_factory=dict)  # the other mount settings
    path: Path | None = None  # the file it was read from
    proxies: tuple[str, ...] = ()  # every request's proxies, in order (arkfs.net.proxies)


@dataclass(frozen=True)
class Discovery:
    """Registries and fallback given on the command line, to combine with the config's."""

    registries: tuple[str, ...] = ()  # asked before the config's
    fallback: str | bool | None = None  # a URL, False (off), None (the config's)
    allow_private: bool = False  # --allow-private: the network may lead to private addresses

    def allows_private(self, config: ResolverConfig) -> bool:
        """Whether registry targets and redirects may lead to private addresses: the
        command line's --allow-private, else the config's allow_private."""
        return self.allow_private or config.settings.get("allow_private") is True

    def sources(
        self, config: ResolverConfig, *, always: bool = False
    ) -> tuple[tuple[str, ...], str | None] | None:
        """The registries and fallback URL (None: off) to resolve with, or None when
        discovery is off: it is on once a registry or a fallback is given (or always).
        The fallback defaults to N2T's."""
        registries = tuple(dict.fromkeys((*self.registries, *config.registries)))
        fallback = config.fallback if self.fallback is None else self.fallback
        if not (always or registries or isinstance(fallback, str)):
            return None
        if fallback is None or fallback is True:
            return registries, DEFAULT_FALLBACK
        return registries, fallback or None


def default_config_path() -> Path:
    """$ARKFS_CONFIG, else config.toml in arkfs's XDG config directory."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    return config_dir() / "config.toml"


def server_urls(value: object, where: str) -> tuple[str, ...]:
    """A server URL or a list of them (config file, --server, the API), each http(s);
    ConfigError, saying where, otherwise."""
    urls = [value] if isinstance(value, str) else value
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        raise ConfigError(f"{where} must be a URL or a list of URLs")
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: {url!r} is not an http:// or https:// URL")
    return tuple(urls)


def is_ttl(value: object) -> bool:
    """Whether value is a metadata TTL: a finite number of seconds >= 0."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < math.inf


def load_config(path: Path, explicit: bool) -> ResolverConfig:
    """Read a config file; a missing file is an empty config unless it was named explicitly."""
    import tomllib

    from arkfs.ark.errors import ArkError
    from arkfs.ark.naan import check_naan

    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file {path} does not exist") from None
        return ResolverConfig()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ConfigError(f"config file {path}: unknown key {unknown[0]!r} ({', '.join(KEYS)})")
    servers = server_urls(data["servers"], f"{path}: servers") if "servers" in data else ()
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
        naans[naan] = server_urls(value, f"{path}: [naans] {key}")
    store = data.get("store")
    if store is not None and not isinstance(store, str):
        raise ConfigError(f"config file {path}: store must be a directory path")
    # A relative store path is relative to the config file, wherever the mount runs.
    store_dir = path.parent.absolute() / Path(store).expanduser() if store else None
    ttl = data.get("metadata_ttl")
    if ttl is not None and not is_ttl(ttl):
        raise ConfigError(f"config file {path}: metadata_ttl must be a number of seconds >= 0")
    return ResolverConfig(
        servers,
        naans,
        store_dir,
        None if ttl is None else float(ttl),
        _registries(data.get("registry"), path),
        _fallback(data.get("fallback"), path),
        _tokens(data.get("tokens", {}), path),
        _settings(data, path),
        path,
        _proxies(data.get("proxies"), path),
    )


def _proxies(value: object, path: Path) -> tuple[str, ...]:
    from arkfs.net.proxies import ProxyError, parse

    if value is None:
        return ()
    proxies = [value] if isinstance(value, str) else value
    if not isinstance(proxies, list) or not all(isinstance(p, str) for p in proxies):
        raise ConfigError(f"config file {path}: proxies must be a list of proxy URLs and DIRECT")
    try:
        parse(proxies, f"config file {path}: proxies")
    except ProxyError as exc:
        raise ConfigError(str(exc)) from None
    return tuple(proxies)


def _settings(data: dict[str, object], path: Path) -> dict[str, object]:
    """The mount settings the file gives, checked: paths made absolute, umask a number."""
    out: dict[str, object] = {}
    for key in SETTINGS:
        if key not in data:
            continue
        value, wrong = data[key], ""
        if key in PATH_SETTINGS:
            if isinstance(value, str) and value:
                value = path.parent.absolute() / Path(value).expanduser()
            else:
                wrong = "a path"
        elif key in FLAG_SETTINGS:
            wrong = "" if isinstance(value, bool) else "true or false"
        elif key in ID_SETTINGS:
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            wrong = "" if ok else "a number >= 0"
        elif key == "cache_size":
            try:
                parse_size(str(value))
            except ValueError:
                wrong = "a size such as 500M or 10G"
            value = str(value)
        elif key == "log_level":
            wrong = "" if value in LOG_LEVELS else f"one of {', '.join(LOG_LEVELS)}"
        elif key == "umask":
            value, wrong = _umask(value)
        if wrong:
            raise ConfigError(f"config file {path}: {key} must be {wrong}")
        out[key] = value
    return out


def _umask(value: object) -> tuple[int, str]:
    """A umask given as an octal string ("027") or a TOML number (0o027); why not, or ""."""
    try:
        mask = int(value, 8) if isinstance(value, str) else value
    except ValueError:
        mask = -1
    if isinstance(mask, int) and not isinstance(mask, bool) and 0 <= mask <= 0o777:
        return mask, ""
    return 0, 'an octal mask such as "027"'


def _registries(value: object, path: Path) -> tuple[str, ...]:
    """The config's registry list: URLs as they are, file paths relative to the config."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) and i for i in items):
        raise ConfigError(f"config file {path}: registry must be a path or URL, or a list of them")
    from arkfs.resolver.registries import is_url

    base = path.parent.absolute()
    return tuple(i if is_url(i) else str(base / Path(i).expanduser()) for i in items)


def fallback_option(text: str) -> str | bool:
    """A fallback as --fallback and the API take it: a resolver's http(s) URL, or `off`
    (False); ConfigError otherwise."""
    from arkfs.resolver.registries import is_url

    if text == "off":
        return False
    if not is_url(text):
        raise ConfigError(f"--fallback {text!r} is not an http(s) URL or off")
    return text


def _fallback(value: object, path: Path) -> str | bool | None:
    from arkfs.resolver.registries import is_url

    if value is None or value is False:
        return value
    if isinstance(value, str) and is_url(value):
        return value
    raise ConfigError(f"config file {path}: fallback must be a resolver's http(s) URL, or false")


def _tokens(table: object, path: Path) -> dict[str, str]:
    """[tokens]: origin -> token, each given as a string or as {file = PATH} (first line)."""
    from arkfs.net.client import origin
    from arkfs.resolver.registries import is_url

    if not isinstance(table, dict):
        raise ConfigError(f"config file {path}: [tokens] must be a table of origin = token")
    tokens = {}
    for where, value in table.items():
        if not is_url(where):
            raise ConfigError(
                f"config file {path}: [tokens] {where!r} is not an origin like https://host:port"
            )
        if isinstance(value, dict) and set(value) == {"file"} and isinstance(value["file"], str):
            token = _token_file(path.parent.absolute() / Path(value["file"]).expanduser(), path)
        elif isinstance(value, str) and value.strip():
            token = value.strip()
        else:
            raise ConfigError(
                f"config file {path}: [tokens] {where!r} must be a token or {{file = PATH}}"
            )
        tokens[origin(where)] = token
    return tokens


def _token_file(file: Path, path: Path) -> str:
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(
            f"config file {path}: cannot read the token file {file}: {reason}"
        ) from None
    if not lines or not lines[0].strip():
        raise ConfigError(f"config file {path}: the token file {file} is empty")
    return lines[0].strip()
