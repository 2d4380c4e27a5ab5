"""The NOID check digit algorithm and minting under a shoulder."""

import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arkfs.ark import (
    MintError,
    ShoulderError,
    check_character,
    mint,
    parse,
    parse_shoulder,
    verify,
)
from arkfs.ark.ncda import ALPHABET
from arkfs.ark.repertoire import BETANUMERIC

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_known_vector() -> None:
    assert check_character("13030/xf93gt2") == "q"
    assert verify("13030/xf93gt2q")
    assert not verify("13030/xf93gt2x")


def test_alphabet_is_the_betanumerics_valued_0_to_28() -> None:
    assert len(ALPHABET) == 29 and set(ALPHABET) == set(BETANUMERIC)


def test_characters_outside_the_alphabet_count_zero_but_take_a_position() -> None:
    # '/' and 'A' are worth 0; the '1' after them is still multiplied by its position 3.
    assert check_character("//1") == check_character("AA1") == ALPHABET[3]
    assert check_character("1") == ALPHABET[1]


def test_check_zone_excludes_the_label_and_qualifiers() -> None:
    ark = parse("https://n2t.net/ark:/13030/xf93gt2q/c3.pdf?info")
    assert ark.check_zone == "13030/xf93gt2q" and verify(ark.check_zone)


# Errors among alphabet characters; outside it every character is worth 0, like "0".
zones = st.text(alphabet=ALPHABET, min_size=1, max_size=27)


@given(zones, st.data())
def test_every_single_substitution_is_detected(zone: str, data: st.DataObject) -> None:
    full = zone + check_character(zone)
    i = data.draw(st.integers(0, len(full) - 1))
    other = data.draw(st.sampled_from(ALPHABET).filter(lambda c: c != full[i]))
    assert not verify(full[:i] + other + full[i + 1 :])


@given(zones, st.data())
def test_every_adjacent_transposition_is_detected(zone: str, data: st.DataObject) -> None:
    full = zone + check_character(zone)
    i = data.draw(st.integers(0, len(full) - 2))
    if full[i] != full[i + 1]:
        assert not verify(full[:i] + full[i + 1] + full[i] + full[i + 2 :])


def test_parse_shoulder_spellings() -> None:
    for text in ("99999/fk4", "ark:99999/fk4", "https://n2t.net/ark:/99999/fk4"):
        shoulder = parse_shoulder(text)
        assert (shoulder.naan, shoulder.name) == ("99999", "fk4")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("99999/fk", "not primordinal"),
        ("99999/fk4x", "not primordinal"),
        ("99999/fk4/c3", "not primordinal"),
        ("99a99/fk4", "not betanumeric"),
        ("99999", "missing Name"),
    ],
)
def test_bad_shoulders(text: str, message: str) -> None:
    with pytest.raises(ShoulderError, match=message):
        parse_shoulder(text)


@given(st.integers(0, 2**32), st.integers(1, 10))
def test_minted_names_follow_the_rules_and_verify(seed: int, length: int) -> None:
    shoulder = parse_shoulder("99999/fk4")
    for ark in mint(shoulder, 5, length=length, rng=random.Random(seed)):
        assert (ark.naan, ark.shoulder) == ("99999", "fk4")
        assert verify(ark.check_zone)
        tail = ark.blade
        assert len(tail) == length + 1 and tail[0] != "0"
        assert set(tail) <= set(BETANUMERIC)
        assert not re.search("[a-z]{3}", tail)
        assert parse(str(ark)) == ark


def test_mint_refuses_a_name_that_is_not_a_shoulder() -> None:
    with pytest.raises(ShoulderError, match="'fk4x' is not primordinal"):
        mint(parse("ark:99999/fk4x"))


def test_mint_avoids_existing_and_repeats() -> None:
    shoulder = parse_shoulder("ark:12345/x6")
    everything = {str(ark) for ark in mint(shoulder, 28, length=1, rng=random.Random(7))}
    assert len(everything) == 28  # 28 first characters (no '0'), one check character each
    kept = sorted(everything)[:5]
    fresh = mint(shoulder, 23, existing=set(kept), length=1, rng=random.Random(8))
    assert {str(ark) for ark in fresh} == everything - set(kept)


def test_mint_reports_an_exhausted_namespace() -> None:
    with pytest.raises(MintError, match=r"found only 28 of 29 .* longer blade"):
        mint(parse_shoulder("99999/fk4"), 29, length=1, rng=random.Random(1))
