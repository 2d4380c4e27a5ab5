"""Normalization and Lexical Equivalence: each step, its order, errors and properties."""

import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from arkfs.ark import (
    Ark,
    ArkSyntaxError,
    CharacterError,
    Inflection,
    MissingLabelError,
    MissingNameError,
    NaanSyntaxError,
    PercentEscapeError,
    equivalent,
    normalize,
    parse,
)
from tests.ark.strategies import arks, spellings

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


@pytest.mark.parametrize(
    "text",
    [
        "https://example.org/ark:12345/x54",
        "http://example.org:8080/a/b/ark:12345/x54",
        "example.org/ark:12345/x54",
        "ftp://x/ark:/12345/x54",
    ],
)
def test_step1_nma_removed(text: str) -> None:
    assert normalize(text) == "ark:12345/x54"


def test_step1_nma_ends_at_the_first_label() -> None:
    with pytest.raises(NaanSyntaxError, match="NAAN 'ark:12345'"):
        parse("https://example.org/ark:/ark:12345/x54")


@pytest.mark.parametrize(
    ("text", "inflection"),
    [
        ("ark:12345/x54?info", Inflection.INFO),
        ("ark:12345/x54??", Inflection.MORE),
        ("ark:12345/x54?", Inflection.BRIEF),
    ],
)
def test_step2_and_7_inflection_noted_and_removed(text: str, inflection: Inflection) -> None:
    ark = parse(text)
    assert (str(ark), ark.inflection, ark.query) == ("ark:12345/x54", inflection, inflection.value)


def test_step2_other_query_removed_but_not_an_inflection() -> None:
    ark = parse("ark:12345/x54?ark:999/y&z")
    assert (str(ark), ark.query, ark.inflection) == ("ark:12345/x54", "?ark:999/y&z", None)


@pytest.mark.parametrize("label", ["ark:", "ark:/", "ARK:", "ARK:/", "aRk:/"])
def test_step3_label_any_case_old_or_new(label: str) -> None:
    assert normalize(f"{label}12345/x54") == "ark:12345/x54"


def test_step4_naan_lowercased_rest_keeps_case() -> None:
    assert normalize("ARK:/1234B/X54/Ab.PDF") == "ark:1234b/X54/Ab.PDF"
    assert not equivalent("ark:12345/X54", "ark:12345/x54")


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("ark:12345/x6%-2f", "ark:12345/x6%2f"),  # '-' and '2' uppercased, then '-' removed
        ("ark:12345/x6%2-f", "ark:12345/x6%2f"),
        ("ark:12345/x6%\u20102-f-", "ark:12345/x6%2f"),
        ("ark:12345/x6%2f", "ark:12345/x6%2F"),
        ("ark:12345/x6%-2F", "ark:12345/x6%2F"),
    ],
)
def test_step5_before_step6_in_the_drafts_order(text: str, normal: str) -> None:
    # Step 5 uppercases the two characters after '%' as they stand; step 6 then removes
    # hyphens: '%-2f' gives '%2f' (the arks.org resolver gives '%2F').
    assert normalize(text) == normal


def test_step5_escape_case_before_hyphen_removal() -> None:
    assert normalize("ark:12345/x%2d-y") == "ark:12345/x%2Dy"
    with pytest.raises(PercentEscapeError, match="'%2'"):
        parse("ark:12345/x%-2")


def test_step6_encoded_hyphen_is_not_a_hyphen() -> None:
    assert normalize("ark:12345/x%2Dy") == "ark:12345/x%2Dy"
    assert not equivalent("ark:12345/x%2Dy", "ark:12345/xy")


@pytest.mark.parametrize("hyphen", ["-", "\u00ad", *(chr(c) for c in range(0x2010, 0x2016))])
def test_step6_hyphen_like_characters_removed(hyphen: str) -> None:
    assert normalize(f"ark:123{hyphen}45/x5{hyphen}4") == "ark:12345/x54"


def test_whitespace_from_line_wrapping_removed() -> None:
    wrapped = "https://example.org/ark:12345/x54-\n      xz321/c3\r\n  .pdf"
    assert normalize(wrapped) == "ark:12345/x54xz321/c3.pdf"
    assert normalize(" ark: /1 2345/x%2\n\tD ") == "ark:12345/x%2D"


def test_step6_before_step8_hyphens_cannot_hide_structural_runs() -> None:
    assert normalize("ark:12345/x54-/-/c3.-.pdf") == "ark:12345/x54/c3.pdf"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ark:12345/x54/", "ark:12345/x54"),
        ("ark:12345/x54.", "ark:12345/x54"),
        ("ark:12345/x54/./", "ark:12345/x54"),
        ("ark:12345//x54//c3", "ark:12345/x54/c3"),
        ("ark:12345/./x54", "ark:12345/x54"),
        ("ark:12345/x54..pdf", "ark:12345/x54.pdf"),
        ("ark:12345/x54/.c3", "ark:12345/x54/c3"),
        ("ark:12345/x54./c3", "ark:12345/x54.c3"),
        ("ark://12345/x54", "ark:12345/x54"),
    ],
)
def test_step8_structural_characters(text: str, expected: str) -> None:
    assert normalize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ark:12345/x54.v2/c3", "ark:12345/x54/c3.v2"),
        ("ark:12345/x54.v2/c3.pdf", "ark:12345/x54/c3.pdf.v2"),
        ("ark:12345/x54.v2.fr/c3/s5.pdf", "ark:12345/x54/c3/s5.pdf.v2.fr"),
        ("ark:12345/a.1/b.2/c.3", "ark:12345/a/b/c.3.1.2"),
    ],
)
def test_step9_period_component_slash_moves_to_the_end(text: str, expected: str) -> None:
    assert normalize(text) == expected


def test_naan_of_sixteen_octets_and_name_of_255_octets() -> None:
    naan = "1234567890bcdfgh"
    qualified = "x" * 200 + "/c3" * 10 + ".v" * 13 + ".pdf"
    assert len(qualified) >= 255
    ark = parse(f"ark:{naan}/{qualified}")
    assert ark.naan == naan and str(ark) == f"ark:{naan}/{qualified}"


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("12345/x54", MissingLabelError, "no 'ark:' label"),
        ("https://example.org/12345/x54", MissingLabelError, "no 'ark:' label"),
        ("park:12345/x54", MissingLabelError, "no 'ark:' label"),
        ("ark:", NaanSyntaxError, "missing NAAN"),
        ("ark:/", NaanSyntaxError, "missing NAAN"),
        ("ark:12a45/x54", NaanSyntaxError, "NAAN '12a45' is not betanumeric"),
        ("ark:12l45/x54", NaanSyntaxError, "'l' not allowed"),
        ("ark:12%3345/x54", NaanSyntaxError, "not betanumeric"),
        ("ark:12345", MissingNameError, "missing Name after NAAN '12345'"),
        ("ark:12345/", MissingNameError, "missing Name"),
        ("ark:12345/x%zz", PercentEscapeError, "malformed %-escape '%zz'"),
        ("ark:12345/x%4", PercentEscapeError, "malformed %-escape '%4'"),
        ("ark:12345/x%%41", PercentEscapeError, "malformed %-escape '%%4'"),
        ("ark:12345/x#y", CharacterError, "'#' .* %-encode it as %23"),
        ("ark:12345/caf\u00e9", CharacterError, "%-encode it as %C3%A9"),
        ("ark:12345/x54/a:b", CharacterError, "in component 'a:b'"),
    ],
)
def test_malformed_arks_name_the_problem(
    text: str, error: type[ArkSyntaxError], message: str
) -> None:
    with pytest.raises(error, match=message):
        parse(text)


def test_every_syntax_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse("ark:12345")


@given(arks.flatmap(lambda ark: st.tuples(st.just(ark), spellings(ark))))
def test_equivalent_spellings_normalize_identically(case: tuple[Ark, str]) -> None:
    ark, spelling = case
    assert normalize(spelling) == str(ark)
    assert parse(spelling) == ark
    assert parse(spelling).inflection == ark.inflection


@given(arks.flatmap(spellings))
def test_normalization_is_idempotent_on_spellings(spelling: str) -> None:
    once = normalize(spelling)
    assert normalize(once) == once


@given(st.text(alphabet="/.%-?0123456789bcdfABCDEFxyz \n\u2010", max_size=30))
def test_normalization_is_idempotent_on_any_text(tail: str) -> None:
    # A hyphen inside an escape ('%-2f') leaves a lowercase digit ('%2f'), which a second
    # normalization uppercases: the draft's step order is not idempotent there.
    assume(re.search("%[\\s]*[-\u2010]|%[\\s]*[^\\s][\\s]*[-\u2010]", tail) is None)
    try:
        once = normalize(f"ark:1234/{tail}")
    except ArkSyntaxError:
        assume(False)
    else:
        assert normalize(once) == once


@given(arks)
def test_parse_format_round_trip(ark: Ark) -> None:
    assert parse(str(ark)) == ark
    again = parse(ark.mapping())
    assert (again, again.resolver, again.query) == (ark, ark.resolver, ark.query)
