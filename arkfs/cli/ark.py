"""`arkfs ark ...`: normalize, parse, check and mint ARK identifiers."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from arkfs.cli.common import EXIT_FAILURE, EXIT_OK, BadInput

if TYPE_CHECKING:  # the ARK layer loads when an action runs: --help starts at once
    from arkfs.ark import Ark


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `arkfs ark` and its actions."""
    p = sub.add_parser(
        "ark",
        help="parse, normalize, check and mint ARK identifiers",
        description="ARK identifier tools: normalize, parse, check and mint. A malformed ARK "
        "exits 2 with one line saying why.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    a = actions.add_parser(
        "normalize",
        help="print the normalized form of each ARK, in order",
        description="Print each ARK in its normal form (the spec's Normalization and Lexical "
        "Equivalence): the resolver part dropped, `ark:` lowercase and without its old `/`, "
        "hyphens and whitespace removed, %-escapes in uppercase, runs and trailing `.` and "
        "`/` trimmed. Two ARKs with the same normal form are the same ARK. Nothing is "
        "printed if any ARK is malformed.",
        epilog="Example:\n  arkfs ark normalize 'https://n2t.net/ARK:/12345/x6-np1wh8k/c3/'\n"
        "  ark:12345/x6np1wh8k/c3",
    )
    a.add_argument("arks", nargs="+", metavar="ARK", help="ARKs in any received spelling")
    a.set_defaults(func=_normalize)

    a = actions.add_parser(
        "parse",
        help="print the parts of an ARK as JSON",
        description="Normalize ARK and print its parts as one JSON object: resolver, NAAN, "
        "Name (shoulder and blade), qualifier (components and variants), inflection, check "
        "zone and whether its check character is right, shared NAAN, parent, variant root, "
        "and the ARKs it implies.",
        epilog="Example:\n  arkfs ark parse 'ark:12345/x6np1wh8k/c3/s5.v7.xsl' | jq .components",
    )
    a.add_argument("ark", metavar="ARK", help="an ARK in any received spelling")
    a.set_defaults(func=_parse)

    a = actions.add_parser(
        "check",
        help="exit 0 if the ARK ends in a correct NOID check character, 1 (and print the "
        "expected one) if not",
        description="Check the NOID check character that ends the check zone of ARK (its NAAN "
        "and Name): print whether it is correct, and exit 0 if it is, 1 (with the character "
        "expected) if not. Catches a mistyped or transposed character in an ARK minted with "
        "one (as `arkfs ark mint` and `--shoulder` do).",
        epilog="Example:\n  arkfs ark check ark:12345/x6np1wh8k",
    )
    a.add_argument("ark", metavar="ARK", help="an ARK in any received spelling")
    a.set_defaults(func=_check)

    a = actions.add_parser(
        "mint",
        help="print new opaque ARKs with check characters",
        description="Print COUNT new opaque ARKs under a primordinal shoulder: random "
        "betanumeric blades of --length characters, each ended by its NOID check character, "
        "none of them in --existing.",
        epilog="Example:\n  arkfs ark mint --shoulder 99999/fk4 -n 3 --existing assigned.txt",
    )
    a.add_argument(
        "--shoulder",
        required=True,
        metavar="NAAN/SHOULDER",
        help="primordinal shoulder to mint under, e.g. 99999/fk4",
    )
    a.add_argument(
        "-n", "--count", type=_positive, default=1, metavar="COUNT", help="how many (default 1)"
    )
    a.add_argument(
        "--length", type=_positive, default=7, help="blade characters before the check one"
    )
    a.add_argument(
        "--existing",
        type=Path,
        metavar="FILE",
        help="file of ARKs already assigned, one per line; none of them is minted again",
    )
    a.set_defaults(func=_mint)


def _normalize(args: argparse.Namespace) -> int:
    """Print one normalized ARK per argument; nothing if any is malformed."""
    lines = [str(_ark(text)) for text in args.arks]
    print("\n".join(lines))
    return EXIT_OK


def _parse(args: argparse.Namespace) -> int:
    """Print the parts of one ARK as a JSON object."""
    from dataclasses import asdict

    from arkfs.ark import verify

    ark = _ark(args.ark)
    shared = ark.shared_naan
    parts = {
        "ark": str(ark),
        "resolver": ark.resolver or None,
        "nma": ark.nma,
        "naan": ark.naan,
        "name": ark.name,
        "shoulder": ark.shoulder,
        "blade": ark.blade,
        "qualifier": ark.qualifier,
        "component_path": ark.component_path,
        "components": list(ark.components),
        "variant_path": ark.variant_path,
        "variants": list(ark.variants),
        "inflection": ark.inflection,
        "query": ark.query or None,
        "check_zone": ark.check_zone,
        "check_character_correct": verify(ark.check_zone),
        "shared_naan": None if shared is None else asdict(shared),
        "parent": _optional(ark.parent()),
        "variant_root": str(ark.variant_root()),
        "implied": [str(implied) for implied in ark.implied()],
    }
    print(json.dumps(parts, indent=2, ensure_ascii=False))
    return EXIT_OK


def _check(args: argparse.Namespace) -> int:
    """Exit 0 if the check character is right; else print the expected one and exit 1."""
    from arkfs.ark import check_character

    zone = _ark(args.ark).check_zone
    expected = check_character(zone[:-1])
    if zone[-1] == expected:
        print(f"{zone}: check character {expected!r} is correct")
        return EXIT_OK
    print(f"{zone}: check character {zone[-1]!r} is wrong, expected {expected!r}")
    return EXIT_FAILURE


def _mint(args: argparse.Namespace) -> int:
    """Print count new ARKs under the shoulder, avoiding those in --existing."""
    from arkfs.ark import ArkSyntaxError, MintError, mint, parse_shoulder

    try:
        shoulder = parse_shoulder(args.shoulder)
    except ArkSyntaxError as exc:
        raise BadInput(str(exc)) from exc
    existing = _existing(args.existing) if args.existing else set()
    try:
        arks = mint(shoulder, args.count, existing=existing, length=args.length)
    except MintError as exc:
        print(f"arkfs: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    print("\n".join(str(ark) for ark in arks))
    return EXIT_OK


def _existing(path: Path) -> set[str]:
    """The normalized ARKs listed in path; blank lines and '#' comments skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read {path}: {exc}") from exc
    keys = set()
    for number, line in enumerate(lines, start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            keys.add(str(_ark(line, where=f"{path}:{number}: ")))
    return keys


def _ark(text: str, where: str = "") -> Ark:
    """Parse text as an ARK; a malformed one is bad input naming the problem."""
    from arkfs.ark import ArkSyntaxError, parse

    try:
        return parse(text)
    except ArkSyntaxError as exc:
        raise BadInput(f"{where}{exc}") from exc


def _optional(ark: Ark | None) -> str | None:
    """str(ark), or None."""
    return None if ark is None else str(ark)


def _positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value
