"""`arkfs publish BAG_DIR --from-bagit`: publish a BagIt bag's payload, checked against its
manifest while hashing (arkfs.export.bag_import), with ERC fields from its bag-info.txt."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, cast

from arkfs.cli.common import BadInput

if TYPE_CHECKING:  # loaded when a bag is read: publish --help starts at once
    from arkfs.archive.manifest import Manifest
    from arkfs.archive.record import VersionInfo
    from arkfs.ark.erc import Erc
    from arkfs.backend.base import Backend
    from arkfs.export.bag_import import Bag

OPTION = "--from-bagit"


def add_option(group: argparse._ArgumentGroup) -> None:
    """Add --from-bagit to publish's options."""
    group.add_argument(
        OPTION,
        action="store_true",
        help="DIR is a BagIt bag: publish its data/, refuse it unless every file matches "
        "its manifest-sha256.txt, and take who/what/when from its bag-info.txt unless given",
    )


def prepare(args: argparse.Namespace) -> None:
    """With --from-bagit: read the bag at DIR (BadInput if it is invalid), point DIR at its
    payload, and fill the ERC options bag-info.txt gives and the command line does not."""
    args.bag = None
    if not args.from_bagit:
        return
    from arkfs.export.bag_import import BagError, read_bag

    try:
        bag = read_bag(args.dir)
    except BagError as exc:
        raise BadInput(f"{OPTION}: {exc}") from None
    if args.erc is None:
        for field, value in bag.erc.items():
            if getattr(args, field) is None:
                setattr(args, field, value)
    if args.what is None:
        args.what = args.dir.resolve().name
    args.bag, args.dir = bag, bag.payload


def checked(backend: Backend, args: argparse.Namespace) -> Backend:
    """backend, or with --from-bagit one that binds only the bag's exact files."""
    bag: Bag | None = args.bag
    return backend if bag is None else cast("Backend", _CheckedBind(backend, bag))


class _CheckedBind:
    """A backend whose bind refuses a manifest (the files as hashed) that is not the bag's;
    everything else is the backend's."""

    def __init__(self, backend: Backend, bag: Bag) -> None:
        self._backend, self._bag = backend, bag

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    async def bind(self, manifest: Manifest, erc: Erc, message: str = "") -> VersionInfo:
        from arkfs.export.bag_import import BagError

        try:
            self._bag.check(manifest)
        except BagError as exc:
            raise BadInput(f"{OPTION}: refused: {exc}") from None
        return await self._backend.bind(manifest, erc, message)
