"""NAAN registries: the JSON snapshot, the ANVL form, shoulder records, N2T's templates."""

import gzip
import json
from pathlib import Path

import pytest

from arkfs.ark.normalization import parse
from arkfs.ark.registry import RegistryError, RegistryRecord, parse_registry

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

# The public NAAN registry in JSON, 2024-11-07 (1,432 NAAN and 368 shoulder records).
SNAPSHOT = gzip.decompress((Path(__file__).parents[1] / "data/naan_records.json.gz").read_bytes())


def test_the_public_snapshot_parses_every_naan_and_shoulder_record() -> None:
    registry = parse_registry(SNAPSHOT.decode())
    assert len(registry) == 1432 + 368
    nlm = registry.find(parse("ark:/12025/b123"))
    assert nlm is not None and nlm.kind == "naan" and nlm.http_code == 302
    assert nlm.target(parse("ark:/12025/b123")) == "http://www.nlm.nih.gov/ark:/12025/b123"


def test_a_shoulder_record_wins_for_the_arks_under_its_shoulder() -> None:
    registry = parse_registry(SNAPSHOT.decode())
    under = registry.find(parse("ark:99166/p9abc"))
    beside = registry.find(parse("ark:99166/x9abc"))
    assert under is not None and str(under) == "shoulder record 99166/p9"
    assert beside is not None and str(beside) == "naan record 99166"


@pytest.mark.parametrize(
    ("template", "shoulder", "expanded"),
    [
        ("https://h/ark:/${content}", "", "https://h/ark:/12345/x6np1wh8k/c3.v2"),
        ("https://h/${value}", "", "https://h/x6np1wh8k/c3.v2"),
        ("https://h/?id=${pid}", "", "https://h/?id=ark:12345/x6np1wh8k/c3.v2"),
        ("https://h/${prefix}/${scheme}", "", "https://h/12345/ark"),
        ("https://h/brunner${suffix}", "x6", "https://h/brunnernp1wh8k/c3.v2"),
        ("https://h/${suffix}", "", "https://h/x6np1wh8k/c3.v2"),
        # string.Template's rules, as the arks.org resolver expands them: no braces, $$.
        ("https://h/ark:/$content", "", "https://h/ark:/12345/x6np1wh8k/c3.v2"),
        ("https://h/$prefix/$value?x=$$1", "", "https://h/12345/x6np1wh8k/c3.v2?x=$1"),
        ("https://h/$${content}", "", "https://h/${content}"),
    ],
)
def test_templates_expand_as_n2t_expands_them(template: str, shoulder: str, expanded: str) -> None:
    record = RegistryRecord("12345", shoulder, template)
    assert record.target(parse("ark:/12345/x6-np1wh8k/c3.v2")) == expanded


def test_an_unknown_template_variable_is_an_error_naming_the_record() -> None:
    record = RegistryRecord("12345", "", "https://h/${nlid}")
    with pytest.raises(RegistryError, match=r"naan record 12345: unknown variable \$\{nlid\}"):
        record.target(parse("ark:12345/x6"))


@pytest.mark.parametrize(
    "template", ["https://h/$id", "https://h/${id}", "https://h/$", "https://h/${"]
)
def test_an_unknown_or_broken_variable_is_an_error_not_requested_literally(template: str) -> None:
    record = RegistryRecord("12345", "", template)
    with pytest.raises(RegistryError, match=r"naan record 12345: .*target"):
        record.target(parse("ark:12345/x6"))


def test_the_anvl_registry_form() -> None:
    text = (
        "# NAAN registry\n\n"
        "naa:\nwho: Example Org\nwhat: 12345\nwhen: 2001.01.01\n"
        "where: http://127.0.0.1:9/\nhow: NP\n\n"
        "naa:\nwho: Split\nwhat: 12345/x6\nwhere: http://127.0.0.1:8\n\n"
        "erc:\nwho: not a NAAN record\nwhat: 99999\nwhere: http://x\n"
    )
    registry = parse_registry(text)
    assert len(registry) == 2
    naan = registry.find(parse("ark:12345/b7"))
    shoulder = registry.find(parse("ark:12345/x6np"))
    assert (
        naan is not None and naan.target(parse("ark:12345/b7")) == "http://127.0.0.1:9/ark:12345/b7"
    )
    assert shoulder is not None and shoulder.who == "Split"
    assert registry.find(parse("ark:99999/x")) is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("{", "not valid JSON"),
        ('{"data": 1}', "a list of records"),
        ("[]", "holds no NAAN record"),
        ('[{"what": "12-3", "target": {"url": "http://x"}}]', "holds no NAAN record"),
        ("# only a comment\n", "holds no NAAN record"),
        (" leading: continuation\n", "ANVL registry is malformed"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"data": [{"what": "12345", "target": ' + "[" * 50_000 + "]" * 50_000 + "}]}", "nested"),
        (b"[\xff]", "not valid JSON"),
        (b"naa:\nwhat: \xff\n", "not UTF-8"),
    ],
)
def test_unusable_registries_say_what_is_expected(text: str | bytes, words: str) -> None:
    with pytest.raises(RegistryError, match=words):
        parse_registry(text, "reg.json")


def test_records_of_any_shape_and_spelling_are_read_the_same() -> None:
    records = [
        {"what": " B1234 ", "target": "http://b/${value}"},  # NAAN to normalize, bare URL
        {"rtype": "PublicNAANShoulder", "naan": "b1234", "shoulder": " x6 ", "target": {"url": "http://s/"}},
        {"what": "b1234", "target": {"url": "http://second/"}},  # the first record wins
        "not a record",
        {"what": "c1234", "target": {"url": "http://c/", "http_code": "302"}},
    ]  # fmt: skip
    registry = parse_registry(json.dumps({"data": records}))
    naan = registry.find(parse("ark:b1234/y"))
    assert naan is not None and naan.target(parse("ark:b1234/y")) == "http://b/y"
    shoulder = registry.find(parse("ark:b1234/x6np"))
    assert shoulder is not None and str(shoulder) == "shoulder record b1234/x6"
    loose = registry.find(parse("ark:c1234/z"))
    assert loose is not None and loose.http_code is None


def test_a_shoulder_record_named_like_its_naan_does_not_hide_the_naans_record() -> None:
    records = [
        {"rtype": "PublicNAANShoulder", "what": "12345", "naan": "12345", "shoulder": "x6",
         "target": {"url": "http://shoulder/"}},
        {"rtype": "PublicNAAN", "what": "12345", "target": {"url": "http://naan/"}},
    ]  # fmt: skip
    registry = parse_registry(json.dumps(records))
    naan, shoulder = registry.find(parse("ark:12345/b7")), registry.find(parse("ark:12345/x6n"))
    assert naan is not None and naan.template == "http://naan/"
    assert shoulder is not None and shoulder.template == "http://shoulder/"


def test_the_longest_shoulder_wins_among_many() -> None:
    records = [{"what": "12345", "target": {"url": "http://naan/"}}] + [
        {"rtype": "PublicNAANShoulder", "naan": "12345", "shoulder": s, "target": {"url": f"http://{s}/"}}
        for s in ("x", "x6", "x6n", *(f"b{i}" for i in range(10_000)))
    ]  # fmt: skip
    registry = parse_registry(json.dumps(records))
    assert len(registry) == 1 + 3 + 10_000
    for name, template in [("x6np", "http://x6n/"), ("x6b", "http://x6/"), ("xq", "http://x/"),
                           ("b9999z", "http://b9999/"), ("q", "http://naan/")]:  # fmt: skip
        found = registry.find(parse(f"ark:12345/{name}"))
        assert found is not None and found.template == template
