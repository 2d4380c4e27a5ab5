"""`arkfs config show`: the effective mount settings and where each one came from."""

import argparse

from arkfs.cli.mount import add_mount_options
from arkfs.cli.resolver_options import resolver_config
from arkfs.cli.settings import COMMAND_LINE, DEFAULT, effective, shown


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register `arkfs config show`."""
    p = sub.add_parser(
        "config",
        help="show the effective mount settings",
        description="Show the settings a mount would use, in config file (TOML) form, each "
        "with where it came from: the command line, the config file, or the default. The "
        "command line overrides the config file. Takes every `arkfs mount` option.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser(
        "show",
        help="print the effective mount settings",
        description="Print `key = value  # source` for every mount setting, as `arkfs mount` "
        "with the same options would use it: from the command line, the config file "
        "($ARKFS_CONFIG or ~/.config/arkfs/config.toml), or the default.",
        epilog="Example:\n  arkfs config show --cache-size 20G --allow-other",
    )
    add_mount_options(show)
    show.set_defaults(func=run_show)


def run_show(args: argparse.Namespace) -> int:
    """Print `key = value  # source` for every mount setting."""
    config = resolver_config(args)
    where = str(config.path) if config.path is not None and config.path.exists() else None
    print(f"# config file: {where or '(none)'}")
    rows = []
    for key, (value, source) in effective(args, config).items():
        text = f'"{value:03o}"' if key == "umask" else shown(value)
        rows.append((key, text, source))
    lists = (
        ("servers", args.server, list(config.servers)),
        ("registry", args.registry, list(config.registries)),
    )
    for key, line, from_file in lists:
        source = " + ".join(s for s, v in ((COMMAND_LINE, line), (where or "", from_file)) if v)
        rows.append((key, "[" + ", ".join(shown(v) for v in (*line, *from_file)) + "]",
                     source or DEFAULT))  # fmt: skip
    for key, line_value, file_value in (
        ("store", args.store, config.store),
        ("fallback", args.fallback, config.fallback),
    ):
        if line_value is not None:
            rows.append((key, shown(line_value), COMMAND_LINE))
        elif file_value is not None:
            rows.append((key, shown(file_value), where or ""))
    for naan, urls in config.naans.items():
        rows.append((f"naans.{naan}", "[" + ", ".join(shown(u) for u in urls) + "]", where or ""))
    for origin in config.tokens:  # never the token itself
        rows.append((f'tokens."{origin}"', '"(set)"', where or ""))
    width = max(len(f"{k} = {v}") for k, v, _ in rows)
    for key, text, source in rows:
        print(f"{f'{key} = {text}':<{width}}  # {source}")
    return 0
