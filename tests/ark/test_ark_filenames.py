"""File names to qualifier components and back."""

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arkfs.ark import (
    CharacterError,
    FilenameError,
    PercentEscapeError,
    filename_to_qualifier,
    normalize,
    parse,
    qualifier_to_filename,
)
from arkfs.ark.filenames import filename_text, text_filename
from tests.ark.strategies import file_names

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


@pytest.mark.parametrize(
    ("name", "qualifier"),
    [
        ("s5", "s5"),
        ("report.pdf", "report%2Epdf"),
        ("my file-1.txt", "my%20file%2D1%2Etxt"),
        ("100%", "100%25"),
        ("Orgelbüchlein", "Orgelb%C3%BCchlein"),
        (".hidden", "%2Ehidden"),
        ("a=b~c*d+e@f_g$h", "a=b~c*d+e@f_g$h"),
        ("q?a#b", "q%3Fa%23b"),
        ("\udcff", "%FF"),
    ],
)
def test_examples(name: str, qualifier: str) -> None:
    assert filename_to_qualifier(name) == qualifier
    assert qualifier_to_filename(qualifier) == name


def test_dots_are_not_variants_and_hyphens_are_not_dropped() -> None:
    ark = (
        parse("ark:12345/x54")
        .child(filename_to_qualifier("v1.2"))
        .child(filename_to_qualifier("a-b.tar.gz"))
    )
    assert ark.variants == () and str(ark) == "ark:12345/x54/v1%2E2/a%2Db%2Etar%2Egz"
    assert [qualifier_to_filename(c) for c in ark.components] == ["v1.2", "a-b.tar.gz"]


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\0b", "\ud800"])
def test_names_that_are_not_file_names(name: str) -> None:
    with pytest.raises(FilenameError):
        filename_to_qualifier(name)


@pytest.mark.parametrize(
    ("qualifier", "error", "message"),
    [
        ("%2F", FilenameError, "not a usable file name"),
        ("%2E%2E", FilenameError, "not a usable file name"),
        ("a%00", FilenameError, "not a usable file name"),
        ("a.b", CharacterError, "'.'"),
        ("a/b", CharacterError, "'/'"),
        ("x%2e", PercentEscapeError, "uppercase hex"),
    ],
)
def test_qualifiers_that_are_not_file_names(
    qualifier: str, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        qualifier_to_filename(qualifier)


@given(file_names)
def test_file_name_round_trip_through_a_normalized_ark(name: str) -> None:
    qualifier = filename_to_qualifier(name)
    key = f"ark:12345/x54/{qualifier}"
    assert normalize(key) == key
    assert qualifier_to_filename(parse(key).components[0]) == name


@given(file_names, file_names)
def test_different_file_names_never_share_a_qualifier(a: str, b: str) -> None:
    if a != b:
        assert filename_to_qualifier(a) != filename_to_qualifier(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [("a-b", "ab"), ("a.b", "a%2Eb"), ("a b", "ab"), ("A", "a"), ("%41", "A"), ("a\u2010b", "a-b")],
)
def test_names_an_ark_would_confuse_stay_apart(a: str, b: str) -> None:
    assert normalize(f"ark:1/x/{filename_to_qualifier(a)}") != normalize(
        f"ark:1/x/{filename_to_qualifier(b)}"
    )


def test_filename_text_shows_bytes_that_are_not_utf8_as_percent_escapes() -> None:
    assert filename_text(os.fsdecode(b"d/caf\xe9 \xff.txt")) == "d/caf%E9 %FF.txt"
    assert filename_text("données/résumé 100%.txt") == "données/résumé 100%.txt"
    assert filename_text(os.fsdecode(b"caf\xe9")).encode("utf-8") == b"caf%E9"
    assert filename_text("caf%E9") == "caf%25E9"  # text that would read as a byte
    assert filename_text("x%25E9%2E") == "x%2525E9%2E"


PIECES = [b"%", b"25", b"E9", b"e9", b"7F", b"\xe9", b"\xc3\xa9", b"a", b"2", b"8", b"F"]


@given(st.binary(max_size=40) | st.lists(st.sampled_from(PIECES), max_size=12).map(b"".join))
def test_filename_text_is_utf8_and_loses_no_byte(raw: bytes) -> None:
    name = os.fsdecode(raw)
    text = filename_text(name)
    text.encode("utf-8")  # strict: no surrogate left
    assert os.fsencode(text_filename(text)) == raw
