"""The ERC record of a new version from publish's and bind's options: --erc FILE, the kernel
fields, --persistence, the rich metadata (arkfs.ark.metadata) and --embargo-until."""

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from arkfs.archive.embargo import parse_date, with_embargo
from arkfs.ark.erc import KERNEL, Erc, Segment
from arkfs.ark.errors import ArkError, ErcError
from arkfs.ark.metadata import (
    CREATOR,
    DESCRIPTION,
    KEYWORD,
    LICENSE,
    RELATED,
    check_record,
    with_values,
)
from arkfs.cli.common import BadInput


def new_erc(args: argparse.Namespace, ark: str, default_what: str, previous: Erc | None) -> Erc:
    """The ERC record of a new version: --erc FILE whole; else the previous version's (the
    defaults for a first one), each of --who/--what/--when/--where/--persistence replacing
    only its own field."""
    given = fields(args)
    if args.erc is not None:
        try:
            erc = Erc.from_anvl(args.erc.read_text(encoding="utf-8"))
            check_record(erc)
        except OSError as exc:
            raise BadInput(f"cannot read {args.erc}: {exc.strerror}") from None
        except ArkError as exc:
            raise BadInput(f"{args.erc}: {exc}") from None
        if erc.where is None:
            erc.where = ark
        return _embargo(args, erc)
    today = time.strftime("%Y-%m-%d")
    base = previous or Erc(who="(:unkn)", what=default_what, when=today, where=ark)
    support = base.support
    if args.persistence:
        who = args.who or (support.who if support else None)
        support = Segment(who=who, what=args.persistence, when=today)
    erc = replace(base, **given, support=support)
    try:
        for label, new in rich(args).items():
            erc = with_values(erc, label, new)
    except ErcError as exc:
        raise BadInput(str(exc)) from None
    return _embargo(args, erc)


def rich(args: argparse.Namespace) -> dict[str, list[str]]:
    """The rich metadata options given: ERC label -> its new values."""
    rich: dict[str, list[str]] = {}
    if args.license is not None:
        rich[LICENSE] = [args.license]
    if args.description is not None:
        rich[DESCRIPTION] = [_text_or_file(args.description)]
    for label, option in ((KEYWORD, args.keyword), (CREATOR, args.creator)):
        if option:
            rich[label] = option
    if args.related:
        rich[RELATED] = args.related
    return rich


def _text_or_file(value: str) -> str:
    """TEXT, or the contents of FILE for @FILE."""
    if not value.startswith("@"):
        return value
    try:
        return Path(value[1:]).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read {value[1:]}: {exc.strerror}") from None


def _embargo(args: argparse.Namespace, erc: Erc) -> Erc:
    """erc with the --embargo-until date, if given (arkfs.archive.embargo)."""
    if args.embargo_until is None:
        return erc
    try:
        return with_embargo(erc, parse_date(args.embargo_until))
    except ValueError as exc:
        raise BadInput(f"--embargo-until: {exc}") from None


def fields(args: argparse.Namespace) -> dict[str, Any]:
    """The ERC fields given as options, after checking the rich ones and the embargo date
    (so a bad licence, ORCID or date stops before a long scan); BadInput if --erc FILE is
    given too."""
    given = {label: getattr(args, label) for label in KERNEL if getattr(args, label) is not None}
    given_rich = rich(args)
    if args.erc is not None and (given or args.persistence or given_rich):
        raise BadInput(
            "give either --erc FILE or the field options (--who, --license, --creator, ...)"
        )
    try:
        for label, new in given_rich.items():
            with_values(Erc(), label, new)
    except ErcError as exc:
        raise BadInput(str(exc)) from None
    _embargo(args, Erc())
    return given
