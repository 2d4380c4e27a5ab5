"""A tree published in-process (scan, then publish_tree) into a backend, for one-layer tests."""

from pathlib import Path

from arkfs.ark.erc import Erc
from arkfs.backend.base import Backend
from arkfs.publish.publisher import publish_tree
from arkfs.publish.scan import scan


async def publish_scanned(backend: Backend, tree: Path, ark: str) -> None:
    """Scan tree and publish it as ark's first version, with a minimal ERC."""
    scanned = scan(tree)
    erc = Erc(who="w", what="x", when="2026", where=ark)
    await publish_tree(backend, ark, scanned.found, erc, previous=None, root=scanned.root)
