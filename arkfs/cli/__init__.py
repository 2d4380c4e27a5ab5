"""The `arkfs` command line."""

from arkfs.cli.main import main

__all__ = ["main"]
