"""`arkfs ark ...` as a user runs it: the real console script in a subprocess."""

import json
from pathlib import Path

import pytest

from arkfs.ark import parse, verify
from tests.support.cli import run_arkfs


def test_normalize_prints_one_line_per_ark_in_order() -> None:
    out = run_arkfs(
        "ark",
        "normalize",
        "https://sneezy.dopey.com/ark:12345/x54--xz32-1",
        "ARK:/12345/x54.v2/c3/",
        "ark:12345/x%acT?info",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "ark:12345/x54xz321",
        "ark:12345/x54/c3.v2",
        "ark:12345/x%ACT",
    ]


def test_parse_prints_the_parts_as_json() -> None:
    out = run_arkfs("ark", "parse", "https://example.org/ark:12345/x6np1wh8k/c3/s5.v7.xsl?info")
    assert out.returncode == 0, out.stderr
    parts = json.loads(out.stdout)
    assert parts["ark"] == "ark:12345/x6np1wh8k/c3/s5.v7.xsl"
    assert (parts["nma"], parts["naan"], parts["shoulder"], parts["blade"]) == (
        "example.org",
        "12345",
        "x6",
        "np1wh8k",
    )
    assert (parts["components"], parts["variants"]) == (["c3", "s5"], ["v7", "xsl"])
    assert (parts["inflection"], parts["check_zone"]) == ("?info", "12345/x6np1wh8k")
    assert parts["shared_naan"]["meaning"] == "examples"
    assert parts["parent"] == "ark:12345/x6np1wh8k/c3"
    assert parts["implied"][-1] == "ark:12345/x6np1wh8k"


def test_check_exits_0_on_a_correct_check_character() -> None:
    out = run_arkfs("ark", "check", "https://n2t.net/ark:/13030/xf93gt2q/c3.pdf")
    assert out.returncode == 0, out.stderr
    assert "'q' is correct" in out.stdout


def test_check_exits_1_and_prints_the_expected_character() -> None:
    out = run_arkfs("ark", "check", "ark:13030/xf93gt2x")
    assert out.returncode == 1
    assert "expected 'q'" in out.stdout


def test_mint_prints_n_new_verified_arks(tmp_path: Path) -> None:
    existing = tmp_path / "existing.txt"
    existing.write_text("# already assigned\n\nark:99999/fk4-bc12\n")
    out = run_arkfs(
        "ark", "mint", "--shoulder", "99999/fk4", "-n", "5", "--existing", str(existing)
    )
    assert out.returncode == 0, out.stderr
    minted = [parse(line) for line in out.stdout.splitlines()]
    assert len(set(minted)) == 5
    assert all(ark.shoulder == "fk4" and verify(ark.check_zone) for ark in minted)


def test_mint_out_of_names_exits_1() -> None:
    out = run_arkfs("ark", "mint", "--shoulder", "99999/fk4", "-n", "29", "--length", "1")
    assert out.returncode == 1
    assert "found only 28 of 29" in out.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("normalize", "ark:12345/x54", "12345/x54"), "no 'ark:' label"),
        (("parse", "ark:12a45/x"), "NAAN '12a45' is not betanumeric"),
        (("parse", "ark:12345/x%zz"), "malformed %-escape '%zz'"),
        (("check", "ark:12345"), "missing Name after NAAN '12345'"),
        (("mint", "--shoulder", "99999/fk"), "not primordinal"),
        (("mint", "--shoulder", "99999/fk4", "-n", "0"), "not a positive integer"),
    ],
)
def test_bad_input_exits_2_with_one_line(args: tuple[str, ...], message: str) -> None:
    out = run_arkfs("ark", *args)
    assert out.returncode == 2
    assert message in out.stderr
    assert out.stdout == ""


def test_malformed_ark_is_one_line_on_stderr() -> None:
    out = run_arkfs("ark", "parse", "ark:12345/x#y")
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        "arkfs: character '#' (U+0023) in Name 'x#y' is not allowed there; %-encode it as %23"
    ]


def test_bad_existing_line_names_file_and_line(tmp_path: Path) -> None:
    existing = tmp_path / "existing.txt"
    existing.write_text("ark:99999/fk4bc12\nnot an ark\n")
    out = run_arkfs("ark", "mint", "--shoulder", "99999/fk4", "--existing", str(existing))
    assert out.returncode == 2
    assert f"{existing}:2: no 'ark:' label" in out.stderr
