"""A damaged xorb never reaches a reader through the NMA: a clean 500 instead of bad bytes."""

import random
from pathlib import Path

import httpx

from arkfs.archive.manifest import Entry, Kind, build
from arkfs.ark.erc import Erc
from arkfs.xet.hashing import string_to_hash
from tests.support.hfxet import upload_files
from tests.support.server import arkfs_server, put_archive

ARK = "ark:12345/x6damage"


def test_flipped_xorb_byte_is_500_not_wrong_bytes(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("w write\n")
    data = random.Random(5).randbytes(200_000)
    (tmp_path / "f").write_bytes(data)
    store = tmp_path / "store"
    with arkfs_server(store, "--tokens", str(tmp_path / "tokens"), "--open-read") as (url, _):
        [info] = upload_files(url, [tmp_path / "f"], token="w")
        entry = Entry("f", Kind.FILE, len(data), 0o644, 0, string_to_hash(info.hash))
        erc = Erc(who="tests", what="damage", when="2024", where=ARK)
        assert put_archive(
            url, build(ARK, [entry], 0.0).to_msgpack(), erc.to_anvl(), "w"
        ).is_success
        assert httpx.get(f"{url}/{ARK}/f").content == data
        [xorb] = [p for p in (store / "xorbs").rglob("*") if p.is_file()]
        stored = bytearray(xorb.read_bytes())
        stored[1000] ^= 0x01  # inside the first chunk; the footer is intact
        xorb.write_bytes(bytes(stored))
        r = httpx.get(f"{url}/{ARK}/f")
        assert r.status_code == 500
        assert f"{ARK}/f: xorb {xorb.name} is damaged" in r.text
        assert r.text.count("\n") == 1
