"""The Ark value: validation, equality, string forms and relations."""

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arkfs.ark import (
    Ark,
    ArkSyntaxError,
    CharacterError,
    MissingNameError,
    NaanSyntaxError,
    PercentEscapeError,
    parse,
)
from tests.ark.strategies import arks, segments

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_resolver_and_query_do_not_take_part_in_identity() -> None:
    a = Ark("12345", "x54", resolver="https://a.org/", query="?info")
    b = Ark("12345", "x54")
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"naan": "", "name": "x"}, NaanSyntaxError, "missing NAAN"),
        ({"naan": "1234A", "name": "x"}, NaanSyntaxError, "not betanumeric"),
        ({"naan": "12345", "name": ""}, MissingNameError, "missing Name after NAAN"),
        ({"naan": "12345", "name": "a/b"}, CharacterError, "'/' .* in Name 'a/b'.* %2F"),
        ({"naan": "12345", "name": "a.b"}, CharacterError, "%2E"),
        ({"naan": "12345", "name": "a-b"}, CharacterError, "%2D"),
        ({"naan": "12345", "name": "x", "components": ("",)}, CharacterError, "empty component"),
        ({"naan": "12345", "name": "x", "variants": ("p f",)}, CharacterError, "in variant"),
        ({"naan": "12345", "name": "x%2"}, PercentEscapeError, "two hex digits"),
        ({"naan": "12345", "name": "x", "query": "info"}, ArkSyntaxError, "must start with '\\?'"),
    ],
)
def test_constructor_accepts_only_normalized_parts(
    kwargs: dict[str, Any], error: type[ArkSyntaxError], message: str
) -> None:
    with pytest.raises(error, match=message):
        Ark(**kwargs)


def test_nma_of_compact_ark_is_none() -> None:
    assert parse("ark:12345/x54").nma is None


def test_mapping_with_a_new_resolver() -> None:
    ark = parse("https://old.example/ark:12345/x54?info")
    assert ark.mapping("https://n2t.net/") == "https://n2t.net/ark:12345/x54?info"


@pytest.mark.parametrize(
    ("name", "shoulder", "blade"),
    [
        ("x6np1wh8k", "x6", "np1wh8k"),
        ("fk4", "fk4", ""),
        ("b5", "b5", ""),
        ("12345", "1", "2345"),
        ("metadc107835", "", "metadc107835"),
        ("X6np", "", "X6np"),
        ("bcd", "", "bcd"),
    ],
)
def test_first_digit_convention(name: str, shoulder: str, blade: str) -> None:
    ark = Ark("12345", name)
    assert (ark.shoulder, ark.blade) == (shoulder, blade)


def test_parent_drops_the_variants_of_the_last_component() -> None:
    ark = parse("ark:12345/x6np1wh8k/c3/s5.v7.xsl")
    assert str(ark.parent()) == "ark:12345/x6np1wh8k/c3"
    assert parse("ark:12345/x54.pdf").parent() is None


def test_implied_lists_variant_roots_then_ancestors() -> None:
    ark = parse("ark:12345/x6np1wh8k/c3/s5.v7.xsl")
    assert [str(a) for a in ark.implied()] == [
        "ark:12345/x6np1wh8k/c3/s5.v7",
        "ark:12345/x6np1wh8k/c3/s5",
        "ark:12345/x6np1wh8k/c3",
        "ark:12345/x6np1wh8k",
    ]


def test_relations_keep_the_resolver_and_drop_the_query() -> None:
    parent = parse("https://n2t.net/ark:12345/x54/c3?info").parent()
    assert parent is not None and (parent.resolver, parent.query) == ("https://n2t.net/", "")


def test_variant_order_is_significant() -> None:
    a, b = parse("ark:12345/x54.fr.pdf"), parse("ark:12345/x54.pdf.fr")
    assert a != b
    assert a.is_variant_of(b)
    assert a.variant_roots()[0] != b.variant_roots()[0]


def test_an_ark_is_not_its_own_variant() -> None:
    ark = parse("ark:12345/x54.pdf")
    assert not ark.is_variant_of(ark)
    assert ark.is_variant_of(ark.variant_root())


def test_child_rejects_more_than_one_component() -> None:
    with pytest.raises(CharacterError, match="in component 'a/b'"):
        parse("ark:12345/x54").child("a/b")


@given(arks, segments)
def test_child_matches_parsing_the_joined_string(ark: Ark, component: str) -> None:
    child = ark.child(component)
    assert child == parse(f"{ark}/{component}")
    assert child.parent() == ark.variant_root()
    assert child.variants == ark.variants


@given(arks)
def test_every_implied_ark_is_a_structural_prefix(ark: Ark) -> None:
    text = str(ark)
    for implied in ark.implied():
        prefix = str(implied)
        assert text.startswith(prefix) and text[len(prefix)] in "/."
    assert len(ark.implied()) == len(ark.components) + len(ark.variants)


@given(st.lists(segments, min_size=1, max_size=4))
def test_ancestors_walk_up_one_component_at_a_time(components: list[str]) -> None:
    ark = Ark("12345", "x54", tuple(components))
    ancestors = ark.ancestors()
    assert ancestors[0] == ark.parent()
    assert [a.components for a in ancestors] == [
        tuple(components[:n]) for n in reversed(range(len(components)))
    ]
