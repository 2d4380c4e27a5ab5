"""The Hub's read API on `arkfs serve`, driven by the real huggingface_hub and hf_xet:
hf_hub_download, snapshot_download and HfFileSystem read the archive's bytes, and the
CAS's reconstructions (hf_xet's way in), not a plain GET of the file, carry them."""

from pathlib import Path

import httpx
import pytest
from huggingface_hub import (
    HfApi,
    HfFileSystem,
    hf_hub_download,
    snapshot_download,
)
from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, RepositoryNotFoundError

from tests.reach.conftest import ARK, TOKEN, Published

REPO = ARK.removeprefix("ark:")


@pytest.fixture(autouse=True)
def quiet_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_XET_TELEMETRY_ENABLED", "false")


def reconstructed(url: str) -> int:
    """File bytes the server's reconstructions have covered so far."""
    stats = httpx.get(f"{url}/v1/stats", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    return int(stats["reconstruction_bytes"])


def test_hf_hub_download_with_hf_xet(reach_archive: Published, tmp_path: Path) -> None:
    url, cache = reach_archive.url, tmp_path / "c"
    before = reconstructed(url)
    got = hf_hub_download(REPO, "data/big.bin", endpoint=url, token=TOKEN, cache_dir=cache)
    truth = (reach_archive.tree / "data/big.bin").read_bytes()
    assert Path(got).read_bytes() == truth
    assert reconstructed(url) - before >= len(truth)  # hf_xet's reconstruction moved them
    old = hf_hub_download(
        REPO, "readme.txt", revision="v1", endpoint=url, token=TOKEN, cache_dir=cache
    )
    assert Path(old).read_bytes() == reach_archive.first_readme
    for repo_type in ("model", "dataset"):
        one = hf_hub_download(
            REPO, "data/one", repo_type=repo_type, endpoint=url, token=TOKEN, cache_dir=cache
        )
        assert Path(one).read_bytes() == b"\x42"


def test_snapshot_download(reach_archive: Published, tmp_path: Path) -> None:
    url = reach_archive.url
    got = Path(snapshot_download(REPO, endpoint=url, token=TOKEN, cache_dir=tmp_path / "c"))
    tree = reach_archive.tree
    files = [p for p in tree.rglob("*") if p.is_file() and not p.is_symlink()]
    for path in files:
        assert (got / path.relative_to(tree)).read_bytes() == path.read_bytes(), path


def test_hf_file_system_ls_open_glob(reach_archive: Published) -> None:
    fs = HfFileSystem(endpoint=reach_archive.url, token=TOKEN, skip_instance_cache=True)
    names = sorted(fs.ls(f"{REPO}/c3", detail=False))  # type: ignore[type-var]
    assert names == [f"{REPO}/c3/deep", f"{REPO}/c3/s5.v7.xsl"]
    truth = (reach_archive.tree / "data/big.bin").read_bytes()
    with fs.open(f"{REPO}/data/big.bin", "rb") as f:
        f.seek(1_000_000)
        assert f.read(1000) == truth[1_000_000:1_001_000]
    assert sorted(fs.glob(f"{REPO}/c3/**/*.bin")) == [f"{REPO}/c3/deep/er/leaf.bin"]


def test_a_wrong_revision_is_a_clear_404(reach_archive: Published) -> None:
    url = f"{reach_archive.url}/api/models/{REPO}/revision/v9"
    resp = httpx.get(url, headers={"Authorization": f"Bearer {TOKEN}"})
    assert resp.status_code == 404 and "no revision" in resp.text
    assert resp.headers["X-Error-Code"] == "RevisionNotFound"


def test_what_is_missing_is_told_as_the_hub_tells_it(reach_archive: Published) -> None:
    api = HfApi(endpoint=reach_archive.url, token=TOKEN)
    assert api.repo_exists(REPO) and api.repo_exists(REPO, repo_type="dataset")
    assert not api.repo_exists("12345/x6none")
    assert api.revision_exists(REPO, "v2") and not api.revision_exists(REPO, "v9")
    assert api.file_exists(REPO, "data/big.bin") and not api.file_exists(REPO, "nope")
    with pytest.raises(EntryNotFoundError, match="'nope' is no file"):
        hf_hub_download(REPO, "nope", endpoint=reach_archive.url, token=TOKEN)
    with pytest.raises(RepositoryNotFoundError):
        api.auth_check("12345/x6none")
    api.auth_check(REPO)  # raises unless the token may read it


def test_paths_info_refs_and_commits(reach_archive: Published) -> None:
    api = HfApi(endpoint=reach_archive.url, token=TOKEN)
    found = api.get_paths_info(REPO, ["readme.txt", "c3", "nope"], revision="v1")
    assert [(f.path, type(f).__name__) for f in found] == [
        ("readme.txt", "RepoFile"),
        ("c3", "RepoFolder"),
    ]
    assert found[0].size == len(reach_archive.first_readme)  # type: ignore[union-attr]
    assert api.get_paths_info(REPO, []) == []
    fresh = HfFileSystem(endpoint=reach_archive.url, token=TOKEN, skip_instance_cache=True)
    assert (
        fresh.info(f"{REPO}/data/big.bin")["size"]
        == (reach_archive.tree / "data/big.bin").stat().st_size
    )
    refs = api.list_repo_refs(REPO)
    v1, v2 = api.model_info(REPO, revision="v1").sha, api.model_info(REPO).sha
    assert [(r.name, r.target_commit) for r in refs.branches] == [("main", v2)]
    assert [(r.name, r.ref, r.target_commit) for r in refs.tags] == [
        ("v2", "refs/tags/v2", v2),
        ("v1", "refs/tags/v1", v1),
    ]
    commits = api.list_repo_commits(REPO)
    assert [c.commit_id for c in commits] == [v2, v1]
    assert commits[0].created_at >= commits[1].created_at
    assert [c.commit_id for c in api.list_repo_commits(REPO, revision="v1")] == [v1]
    assert [c.title for c in commits] == ["v2", "v1"]  # published without a message


def test_withdrawn_and_embargoed_archives_stay_closed(tmp_path: Path) -> None:
    from tests.support.archive import make_tree, publish
    from tests.support.cli import run_arkfs
    from tests.support.server import arkfs_server

    tree, store = make_tree(tmp_path / "tree"), tmp_path / "store"
    publish(tree, "ark:12345/x8gone", "--store", str(store))
    publish(tree, "ark:12345/x9later", "--store", str(store), "--embargo-until", "2999-01-01")
    gone = run_arkfs("withdraw", "ark:12345/x8gone", "--reason", "retracted", "--store", str(store))
    assert gone.returncode == 0, gone.stderr
    (tmp_path / "tokens").write_text(f"{TOKEN} read\n")
    with arkfs_server(store, "--open-read", "--tokens", str(tmp_path / "tokens")) as (url, _):
        head = httpx.head(f"{url}/12345/x8gone/resolve/main/readme.txt")
        assert head.status_code == 410
        anonymous = httpx.get(f"{url}/api/models/12345/x9later/tree/main")
        assert anonymous.status_code == 401
        reader = httpx.get(
            f"{url}/api/models/12345/x9later/tree/main",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert reader.status_code == 200 and reader.json()


def test_a_malformed_paths_info_request_is_a_400(reach_archive: Published) -> None:
    url = f"{reach_archive.url}/api/models/{REPO}/paths-info/main"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for body, kind in [
        (b"{", "application/json"),
        (b'{"paths": "readme.txt"}', "application/json"),
        (b"paths=\xff", "application/x-www-form-urlencoded"),
    ]:
        resp = httpx.post(url, content=body, headers=auth | {"Content-Type": kind})
        assert resp.status_code == 400 and "`paths`" in resp.text, (body, resp.text)


def test_whoami_tells_the_tokens_role(reach_archive: Published) -> None:
    api = HfApi(endpoint=reach_archive.url)
    me = api.whoami(token=TOKEN)
    assert me["name"] == "arkfs" and me["auth"]["accessToken"]["role"] == "read"
    with pytest.raises(HfHubHTTPError, match="Invalid user token"):  # our 401, as the Hub reads it
        api.whoami(token="not-a-token")
