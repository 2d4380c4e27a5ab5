"""GET /v1/stats: what the CAS of a real `arkfs serve` has served, counted per kind."""

import random
from pathlib import Path

import httpx

from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import Reconstruction
from tests.backend.content import build_content
from tests.support.server import arkfs_server


def test_stats_count_uploads_reconstructions_data_and_footer_reads(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("w write\nr read\n")
    content = build_content({"file": random.Random(3).randbytes(300_000)})
    f = content.files["file"]
    with arkfs_server(tmp_path / "store", "--tokens", str(tmp_path / "tokens")) as (url, _):
        read, write = {"Authorization": "Bearer r"}, {"Authorization": "Bearer w"}
        assert httpx.get(f"{url}/v1/stats").status_code == 401
        zero = httpx.get(f"{url}/v1/stats", headers=read).json()
        assert set(zero.values()) == {0}
        for x in content.xorbs:
            r = httpx.post(f"{url}/v1/xorbs/default/{hash_to_string(x.hash)}", content=x.data,
                           headers=write)  # fmt: skip
            assert r.status_code == 200
        assert httpx.post(f"{url}/v1/shards", content=content.shard, headers=write).is_success
        r = httpx.get(
            f"{url}/v2/reconstructions/{hash_to_string(f.hash)}",
            headers={**read, "Range": "bytes=1000-200999"},
        )
        rec = Reconstruction.from_json(r.json())
        (fr, *_), *_ = rec.fetch.values()
        data = httpx.get(fr.url, headers={"Range": f"bytes={fr.byte_start}-{fr.byte_end}"})
        tail = httpx.get(fr.url, headers={"Range": "bytes=-100"})
        whole = httpx.get(fr.url)
        dedup = httpx.get(f"{url}/v1/chunks/default/{hash_to_string(f.chunks[0])}", headers=read)
        assert dedup.status_code == 200 and len(tail.content) == 100
        assert whole.content == content.xorbs[0].data  # sent from the file, to the byte
        assert data.content == whole.content[fr.byte_start : fr.byte_end + 1]
        stats = httpx.get(f"{url}/v1/stats", headers=read).json()
    assert stats == {
        "reconstructions": 1,
        "batch_reconstructions": 0,
        "reconstruction_bytes": 200_000,
        "reconstruction_bytes_sent": len(r.content),
        "xorb_requests": 2,
        "xorb_bytes_served": len(data.content) + len(whole.content),
        "footer_requests": 1,
        "footer_bytes_served": 100,
        "xorb_bytes_sendfile": len(data.content) + len(whole.content),  # each over 64 KiB
        "dedup_queries": 1,
        "xorb_uploads": len(content.xorbs),
        "xorb_bytes_received": sum(len(x.data) for x in content.xorbs),
        "shard_uploads": 1,
    }
