"""The resolver options `arkfs mount` and `arkfs resolve` share: --config, --registry,
--fallback and --allow-private, checked here once."""

import argparse
import os
from pathlib import Path

from arkfs.cli.common import BadInput
from arkfs.cli.helptext import Options
from arkfs.mount.config import (
    CONFIG_ENV,
    DEFAULT_FALLBACK,
    ConfigError,
    Discovery,
    ResolverConfig,
    default_config_path,
    fallback_option,
    load_config,
)


def add_resolver_options(p: Options) -> None:
    """--config, --registry (repeatable) and --fallback."""
    p.add_argument("--config", type=Path, metavar="FILE", help="resolver config file (TOML)")
    p.add_argument(
        "--registry",
        action="append",
        default=[],
        metavar="PATH|URL",
        help="a NAAN registry, JSON or ANVL (repeatable; earlier wins; before the config's)",
    )
    p.add_argument(
        "--fallback",
        metavar="URL|off",
        help=f"resolver for NAANs no registry knows (default {DEFAULT_FALLBACK}; off: none)",
    )
    p.add_argument(
        "--allow-private",
        action="store_true",
        help="let registry targets and redirects lead to loopback, link-local and private "
        "addresses (allow_private in the config; for tests and local setups)",
    )


def resolver_config(args: argparse.Namespace) -> ResolverConfig:
    """The config file: --config, else $ARKFS_CONFIG, else the default (may be absent)."""
    config_path = args.config or default_config_path()
    explicit = args.config is not None or bool(os.environ.get(CONFIG_ENV))
    from arkfs.net import proxies  # httpx loads when a command runs, not for --help

    try:
        config = load_config(config_path, explicit)
        if config.proxies:  # every request of this command goes through them
            proxies.use(config.proxies, f"config file {config.path}: proxies")
        else:
            proxies.chain()  # checks $ARKFS_PROXIES now, not at the first request
    except (ConfigError, proxies.ProxyError) as exc:
        raise BadInput(str(exc)) from None
    return config


def discovery_from(args: argparse.Namespace, config: ResolverConfig) -> Discovery:
    """--registry, --fallback and --allow-private, checked (registry files must read well),
    over config's."""
    registries = tuple(_check_registry(r) for r in args.registry)
    for source in config.registries:
        _check_registry(source)
    fallback: str | bool | None = None
    if args.fallback is not None:
        try:
            fallback = fallback_option(args.fallback)
        except ConfigError as exc:
            raise BadInput(str(exc)) from None
    return Discovery(registries, fallback, args.allow_private)


def _check_registry(source: str) -> str:
    """A registry URL as it is; a registry file as an absolute path, once it reads well."""
    from arkfs.ark.registry import RegistryError
    from arkfs.resolver.registries import RegistryUnavailable, is_url, load_file

    if is_url(source):
        return source
    path = Path(os.path.abspath(Path(source).expanduser()))
    try:
        load_file(path)
    except (RegistryUnavailable, RegistryError) as exc:
        raise BadInput(str(exc)) from None
    return str(path)
