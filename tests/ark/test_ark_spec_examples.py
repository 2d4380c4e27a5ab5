"""Every example ARK in the text of draft-kunze-ark-40, section by section."""

import pytest

from arkfs.ark import (
    Ark,
    Inflection,
    MissingNameError,
    equivalent,
    normalize,
    parse,
    verify,
)

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

ANATOMY = "https://example.org/ark:12345/x6np1wh8k/c3/s5.v7.xsl"


def test_anatomy_details() -> None:
    ark = parse(ANATOMY)
    assert ark.resolver == "https://example.org/"
    assert ark.nma == "example.org"
    assert (ark.naan, ark.name) == ("12345", "x6np1wh8k")
    assert (ark.shoulder, ark.blade) == ("x6", "np1wh8k")
    assert ark.components == ("c3", "s5") and ark.component_path == "/c3/s5"
    assert ark.variants == ("v7", "xsl") and ark.variant_path == ".v7.xsl"
    assert ark.qualifier == "/c3/s5.v7.xsl"
    assert ark.check_zone == "12345/x6np1wh8k"
    assert str(ark.base) == "ark:12345/x6np1wh8k"
    assert str(ark) == "ark:12345/x6np1wh8k/c3/s5.v7.xsl"
    assert ark.mapping() == ANATOMY


def test_anatomy_name_carries_a_noid_check_character() -> None:
    assert verify(parse(ANATOMY).check_zone)


@pytest.mark.parametrize("form", ["ark:12345/x6", "https://example.org/ark:12345/x6"])
def test_shoulder_compact_and_fully_qualified_forms(form: str) -> None:
    ark = parse(form)
    assert (ark.naan, ark.name, ark.shoulder, ark.blade) == ("12345", "x6", "x6", "")


@pytest.mark.parametrize(
    "form",
    [
        "ark:12345",
        "ark:12345/",
        "https://example.org/ark:12345",
        "https://digital.library.unt.edu/ark:/67531/",
    ],
)
def test_naan_forms_have_no_name_so_are_not_arks(form: str) -> None:
    with pytest.raises(MissingNameError, match="missing Name after NAAN"):
        parse(form)


def test_three_synonyms_across_nmas() -> None:
    synonyms = [
        "http://example.org/rslvr/ark:12345/x6np1wh8k",
        "https://example.com/ark:12345/x6np1wh8k",
        "ark:12345/x6np1wh8k",
    ]
    assert {normalize(s) for s in synonyms} == {"ark:12345/x6np1wh8k"}
    assert len({parse(s) for s in synonyms}) == 1
    assert parse(synonyms[0]).nma == "example.org/rslvr"


def test_old_and_new_labels_are_equivalent() -> None:
    assert equivalent("ark:/12345/x6np1wh8k", "ark:12345/x6np1wh8k")
    assert normalize("ark:/12345/x6np1wh8k") == "ark:12345/x6np1wh8k"


def test_primordinal_shoulder_without_delimiter() -> None:
    correct = parse("ark:12345/x6np1wh8k/c2/s4.pdf")
    assert (correct.shoulder, correct.name) == ("x6", "x6np1wh8k")
    # The INCORRECT form declares x6 an object containing np1wh8k.
    incorrect = parse("ark:12345/x6/np1wh8k/c2/s4.pdf")
    assert (incorrect.name, incorrect.components) == ("x6", ("np1wh8k", "c2", "s4"))
    assert incorrect.ancestors()[-1] == parse("ark:12345/x6")


def test_hierarchy_implies_containing_objects() -> None:
    ark = parse("ark:12345/x54/xz/321")
    assert ark.parent() == parse("ark:12345/x54/xz")
    assert ark.ancestors() == (parse("ark:12345/x54/xz"), parse("ark:12345/x54"))
    assert ark.implied() == ark.ancestors()
    assert parse("ark:12345/x54").parent() is None


def test_no_slashes_reveal_no_relations() -> None:
    arks = [
        parse(s)
        for s in [
            "ark:12345/x54_xz_321",
            "ark:12345/x54_xz",
            "ark:12345/x54xz321",
            "ark:12345/x54xz",
            "ark:12345/x54",
        ]
    ]
    assert all(ark.parent() is None and ark.implied() == () for ark in arks)
    assert not any(a.is_variant_of(b) for a in arks for b in arks)


def test_slashes_around_the_naan_are_not_part_of_the_name() -> None:
    assert parse("ark:/12345/x54").implied() == ()


@pytest.mark.parametrize(
    ("text", "root", "variants"),
    [
        ("ark:12345/x54.24", "ark:12345/x54", ("24",)),
        ("ark:12345/x4z/x54.24", "ark:12345/x4z/x54", ("24",)),
        ("ark:12345/x54.v18.fr.odf", "ark:12345/x54", ("v18", "fr", "odf")),
    ],
)
def test_suffixes_after_a_root_name(text: str, root: str, variants: tuple[str, ...]) -> None:
    ark = parse(text)
    assert str(ark.variant_root()) == root
    assert ark.variants == variants


def test_same_root_different_suffixes_are_variants() -> None:
    arks = [
        parse(s) for s in ["ark:12345/x54.v18.fr.odf", "ark:12345/x54.321xz", "ark:12345/x54.44"]
    ]
    assert all(a.is_variant_of(b) for a in arks for b in arks if a is not b)
    assert not parse("ark:12345/x4z/x54.24").is_variant_of(parse("ark:12345/x54.44"))


def test_a_suffix_implies_the_variants_without_it() -> None:
    implied = parse("ark:12345/x54.v18.fr.odf").implied()
    assert [str(a) for a in implied] == [
        "ark:12345/x54.v18.fr",
        "ark:12345/x54.v18",
        "ark:12345/x54",
    ]


def test_hyphens_are_identity_inert() -> None:
    spellings = [
        "ark:12345/x5-4-xz-321",
        "https://sneezy.dopey.com/ark:12345/x54--xz32-1",
        "ark:12345/x54xz321",
    ]
    assert {normalize(s) for s in spellings} == {"ark:12345/x54xz321"}


def test_percent_escapes_uppercased_other_letters_kept() -> None:
    assert normalize("ark:12345/x%acT") == "ark:12345/x%ACT"
    assert normalize("ark:12345/x%7d") == "ark:12345/x%7D"  # stands in for '}'
    assert normalize("ark:12345/100%25") == "ark:12345/100%25"


def test_thump_request_without_scheme() -> None:
    ark = parse("n2t.net/ark:67531/metadc107835?info")
    assert (ark.nma, str(ark), ark.inflection) == (
        "n2t.net",
        "ark:67531/metadc107835",
        Inflection.INFO,
    )


def test_thump_get_line_and_the_arks_wrapped_spelling() -> None:
    request = parse("https://n2t.net/ark:67531/metadc107835?info")
    assert (request.resolver, request.inflection) == ("https://n2t.net/", Inflection.INFO)
    # The spec's own prose wraps this ARK: "ark:67531/ metadc107835".
    assert parse("ark:67531/\nmetadc107835") == request


def test_erc_where_with_old_label_inside_a_url() -> None:
    where = "https://digital.library.unt.edu/ark:/67531/metadc107835"
    assert equivalent(where, "n2t.net/ark:67531/metadc107835?info")


def test_advice_to_web_clients_links() -> None:
    first, second = (
        parse("https://example.org/ark:14697/b12345x"),
        parse("https://n2t.net/ark:14697/b12345x"),
    )
    assert first == second and (first.nma, second.nma) == ("example.org", "n2t.net")
    assert (first.shoulder, first.blade) == ("b1", "2345x")


def test_namespace_under_12345_is_the_examples_shared_naan() -> None:
    shared = parse("ark:12345/x54").shared_naan
    assert shared is not None and shared.meaning == "examples" and not shared.long_term


@pytest.mark.parametrize(
    ("naan", "meaning", "resolves", "long_term"),
    [
        ("12345", "examples", "maybe", False),
        ("99152", "terms", "yes", True),
        ("99166", "agents", "yes", True),
        ("99999", "test ids", "maybe", False),
    ],
)
def test_shared_naans(naan: str, meaning: str, resolves: str, long_term: bool) -> None:
    shared = Ark(naan, "fk9x").shared_naan
    assert shared is not None
    assert (shared.meaning, shared.expect_to_resolve, shared.long_term) == (
        meaning,
        resolves,
        long_term,
    )


def test_ordinary_naan_is_not_shared() -> None:
    assert parse("ark:12148/b1").shared_naan is None
