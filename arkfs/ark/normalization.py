"""Normalization and Lexical Equivalence: any received spelling of an ARK to its parts.

The steps run in the spec's order; where the spec leaves a choice open:

- Text pasted from a wrapped line is cleaned first: every whitespace character is
  removed, and U+2010 to U+2015 and the soft hyphen U+00AD count as hyphens.
- A '%' must be followed by two hex digits once hyphens are gone. Step 5 uppercases the
  two characters that follow '%' as they stand, before step 6 removes hyphens, so
  '%-2f' becomes '%2f' (the draft's order), not '%2F' as arks.org normalizes it; such
  an escape keeps its lowercase digit. Escapes are never decoded, so '%41' and 'A' differ
  (the URI draft would decode; draft-40 does not).
- The inflection is noted at step 2, which already removes the query step 7 looks at.
- A variant followed by a component (`x.v2/c3`) moves to the end of the ARK
  (`x/c3.v2`); several move in their original order, after the last component's own
  variants, rather than the ARK being thrown out.
"""

import re

from arkfs.ark.errors import MissingLabelError, PercentEscapeError
from arkfs.ark.identifier import Ark

_WHITESPACE = re.compile(r"\s+")
# The ARK Label Part: "ark:" or the old "ark:/", any case, at the start or after the NMA's '/'.
_LABEL = re.compile(r"(?:^|(?<=/))ark:/?", re.IGNORECASE)
_HYPHEN_CHARS = "[-\u00ad\u2010-\u2015]"
_HYPHENS = re.compile(_HYPHEN_CHARS)
# Normalization and Lexical Equivalence, step 5: "the two characters following every
# occurrence of '%' are converted to uppercase", as they stand: step 6 removes hyphens
# only after that, so '%-2f' gives '%2f'. arkfs follows the draft's order here where the
# arks.org resolver gives '%2F'.
_ESCAPE = re.compile("%.{0,2}", re.DOTALL)
_BAD_ESCAPE = re.compile("%(?![0-9A-Fa-f]{2}).{0,2}", re.DOTALL)
_STRUCTURAL_RUN = re.compile(r"([./])[./]+")


def parse(text: str) -> Ark:
    """Parse and normalize any received form of an ARK; raise ArkSyntaxError if malformed."""
    text = _WHITESPACE.sub("", text)
    # 1. The NMA part, everything up to the first "/ark:", is removed.
    label = _LABEL.search(text)
    if label is None:
        raise MissingLabelError(
            f"no 'ark:' label in {text!r}: an ARK looks like ark:NAAN/Name, optionally "
            "after https://host/"
        )
    resolver = text[: label.start()]
    # 2. Any query string is removed; 7. it is noted as the inflection (see Ark.inflection).
    body, question, query = text[label.end() :].partition("?")
    # 3. The label becomes "ark:" (the slash of the old form went with the match above).
    # 4. Uppercase letters in the NAAN become lowercase.
    naan_start = len(body) - len(body.lstrip("/"))
    naan_end = body.find("/", naan_start)
    naan_end = len(body) if naan_end < 0 else naan_end
    body = body[:naan_start] + body[naan_start:naan_end].lower() + body[naan_end:]
    # 5. The two characters after every '%' become uppercase.
    if "%" in body:
        bad = _BAD_ESCAPE.search(_HYPHENS.sub("", body))  # as step 6 will leave it
        if bad is not None:
            raise PercentEscapeError(
                f"malformed %-escape {bad[0]!r}: '%' must be followed by two hex digits "
                "(write a literal '%' as %25)"
            )
        body = _ESCAPE.sub(lambda escape: escape[0].upper(), body)
    # 6. All hyphens are removed, including the non-ASCII hyphen-like characters.
    body = _HYPHENS.sub("", body)
    # 8. Structural characters: initial and final ones removed, runs reduced to their first.
    body = _STRUCTURAL_RUN.sub(lambda run: run[1], body).strip("./")
    naan, _, rest = body.partition("/")
    # 9. A component with a period on its left and a slash on its right moves to the end.
    parts = [part.partition(".") for part in rest.split("/")]
    tails = [tail for _, _, tail in parts]
    variants = tuple(v for tail in (tails[-1], *tails[:-1]) if tail for v in tail.split("."))
    name, *components = (head for head, _, _ in parts)
    # The Ark checks the NAAN, that there is a Name, and the repertoire of every part.
    return Ark(naan, name, tuple(components), variants, resolver, question + query)


def normalize(text: str) -> str:
    """The normalized Compact ARK for any received spelling: the key for equality tests."""
    return str(parse(text))


def equivalent(first: str, second: str) -> bool:
    """Whether two received ARKs are lexically equivalent (identify the same object)."""
    return normalize(first) == normalize(second)
