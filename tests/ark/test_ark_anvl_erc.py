"""ANVL records, ERC metadata and THUMP `?info` replies."""

import json
from http import HTTPStatus
from typing import Any

import pytest
from hypothesis import given

from arkfs.ark import (
    AnvlError,
    Element,
    Erc,
    ErcError,
    NullCode,
    Segment,
    info_response,
    null_code,
    parse,
    read_records,
    write_record,
)
from tests.ark.strategies import anvl_records, ercs

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

# The body of the THUMP session in Overview of The HTTP URL Mapping Protocol (THUMP).
THUMP_BODY = """\
erc:
who:   Austin, Larry
what:  A Study of Rhythm in Bach's Orgelb\u00fcchlein
when:  1952
where: https://digital.library.unt.edu/ark:/67531/metadc107835
erc-support:
who:   University of North Texas Libraries
what:  Permanent: Stable Content:
when:  20081203
where: https://digital.library.unt.edu/ark:/67531/
"""

SPEC_RECORD = Erc(
    who="Austin, Larry",
    what="A Study of Rhythm in Bach's Orgelb\u00fcchlein",
    when="1952",
    where="https://digital.library.unt.edu/ark:/67531/metadc107835",
    support=Segment(
        who="University of North Texas Libraries",
        what="Permanent: Stable Content:",
        when="20081203",
        where="https://digital.library.unt.edu/ark:/67531/",
    ),
)


def test_anvl_continuation_comments_and_records() -> None:
    text = (
        "# a comment\r\n"
        "who:  Lederberg, Joshua\r\n"
        "note:   This is an example of a\n"
        "        small descriptive record.\n"
        "#  comment inside\n"
        "\tstill the note\n"
        "empty:\n"
        "   \n"
        "label with space : v : w\n"
    )
    assert read_records(text) == [
        [
            ("who", "Lederberg, Joshua"),
            ("note", "This is an example of a small descriptive record. still the note"),
            ("empty", ""),
        ],
        [("label with space", "v : w")],
    ]


def test_anvl_escapes_decoded() -> None:
    assert read_records("a%3Ab: 100%25%0Aline%0D2\n") == [[("a:b", "100%\nline\r2")]]


def test_anvl_writes_a_percent_encoded_value_as_spelled() -> None:
    """One spelling of an ARK: its own %-escapes are not escaped again, and read back as
    they are (other %XX than ANVL's escapes, %FF too, are text)."""
    ark = "ark:12345/x6np1wh8k/c3/s5%2Ev7%2Exsl%FF"
    assert write_record([("where", ark)]) == f"where: {ark}\n"
    assert read_records(f"where: {ark}\n") == [[("where", ark)]]
    tricky = "100%25 and %0a and %%20 "
    assert read_records(write_record([("a", tricky)])) == [[("a", tricky)]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("  starts indented\n", "line 1: continuation line with no element"),
        ("who: x\nno colon here\n", "line 2: no ':' after the label"),
        (": value\n", "line 1: empty label"),
    ],
)
def test_anvl_errors_name_the_line(text: str, message: str) -> None:
    with pytest.raises(AnvlError, match=message):
        read_records(text)


def test_anvl_writes_comments_first() -> None:
    text = write_record([("who", "x")], comments=["made by\narkfs"])
    assert text == "# made by\n# arkfs\nwho: x\n"
    assert read_records(text) == [[("who", "x")]]


def test_anvl_write_refuses_an_empty_label() -> None:
    with pytest.raises(AnvlError, match="empty label"):
        write_record([("", "v")])


@given(anvl_records)
def test_anvl_round_trip_for_arbitrary_labels_and_values(record: list[Element]) -> None:
    assert read_records(write_record(record)) == [record]


@given(anvl_records, anvl_records)
def test_anvl_records_joined_by_a_blank_line(a: list[Element], b: list[Element]) -> None:
    assert read_records(write_record(a) + "\n" + write_record(b)) == [a, b]


def test_erc_reads_the_thump_example() -> None:
    assert Erc.from_anvl(THUMP_BODY) == SPEC_RECORD


def test_erc_short_form() -> None:
    erc = Erc.from_anvl(
        "erc: Gibbon, Edward | The Decline and Fall of the Roman Empire | 1781 | "
        "http://www.ccel.org/g/gibbon/decline/\nnote: vol 1\n"
    )
    assert (erc.who, erc.when, erc.other) == ("Gibbon, Edward", "1781", [("note", "vol 1")])
    partial = Erc.from_anvl("erc: | Untitled\nerc-support: NTU | (:unav)\n")
    assert (partial.who, partial.what, partial.when) == (None, "Untitled", None)
    assert partial.support == Segment(who="NTU", what="(:unav)")


def test_erc_repeated_kernel_elements_keep_their_order() -> None:
    erc = Erc.from_anvl("erc:\nwho: A\nnote: n\nwho: B\n")
    assert (erc.who, erc.other) == ("A", [("note", "n"), ("who", "B")])
    assert Erc.from_anvl(erc.to_anvl()) == erc


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("erc: a | b | c | d | e\n", "at most 4"),
        ("erc:\nerc:\n", "appears twice"),
        ("who: a\n\nwho: b\n", "expected one ANVL record, found 2"),
    ],
)
def test_erc_errors(text: str, message: str) -> None:
    with pytest.raises(ErcError, match=message):
        Erc.from_anvl(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"other": [("erc-support", "x")]}, "starts a segment"),
        ({"other": [("who", "x")]}, "set who itself"),
    ],
)
def test_segment_rejects_elements_it_could_not_write_back(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ErcError, match=message):
        Segment(**kwargs)


@given(ercs())
def test_erc_anvl_round_trip(erc: Erc) -> None:
    assert Erc.from_anvl(erc.to_anvl()) == erc


@given(ercs(unique=True))
def test_erc_json_round_trip(erc: Erc) -> None:
    assert Erc.from_json(json.loads(json.dumps(erc.to_json()))) == erc


def test_erc_json_mapping_groups_repeated_labels() -> None:
    erc = Erc(who="A", other=[("who", "B"), ("note", "n")], support=Segment(what="(:unas)"))
    assert erc.to_json() == {
        "erc": {"who": ["A", "B"], "note": "n"},
        "erc-support": {"what": "(:unas)"},
    }


@pytest.mark.parametrize("data", [[], {"erc": []}, {"erc": {"who": 1}}, {"other": {}}])
def test_erc_from_bad_json(data: object) -> None:
    with pytest.raises(ErcError):
        Erc.from_json(data)


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("(:unav)", NullCode.UNAV),
        ("(:unkn) anonymous", NullCode.UNKN),
        ("(:unas)", NullCode.UNAS),
        ("(:etal)", NullCode.ETAL),
        ("Austin, Larry", None),
        ("(:nonsense)", None),
    ],
)
def test_null_value_codes(value: str, code: NullCode | None) -> None:
    assert null_code(value) == code


def test_null_codes_have_meanings() -> None:
    assert NullCode.UNKN.meaning.startswith("known to be unknown")
    assert all(code.meaning for code in NullCode)


def test_thump_info_reply() -> None:
    ark = parse("https://n2t.net/ark:67531/metadc107835?info")
    headers, body = info_response(ark, SPEC_RECORD)
    assert headers == {
        "Content-Type": "text/plain; charset=utf-8",
        "THUMP-Status": "0.6 200 OK",
        "Link": '</ark:67531/metadc107835>; rel="describes"',
    }
    assert Erc.from_anvl(body) == SPEC_RECORD
    assert body.splitlines()[0] == "erc:" and "erc-support:" in body.splitlines()


def test_thump_reply_under_a_service_path_with_a_status() -> None:
    ark = parse("ark:12345/x54/c3.pdf??")
    headers, _ = info_response(ark, Erc(), service_path="/resolver/", status=HTTPStatus.NOT_FOUND)
    assert headers["THUMP-Status"] == "0.6 404 Not Found"
    assert headers["Link"] == '</resolver/ark:12345/x54/c3.pdf>; rel="describes"'
