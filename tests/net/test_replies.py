"""Reply bodies as objects: JSON and msgpack, and what is not an object in either."""

import httpx
import msgpack
import pytest

from arkfs.backend.base import BadReply
from arkfs.net.client import json_reply, media_type, msgpack_reply

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def reply(content: bytes, content_type: str = "application/vnd.msgpack") -> httpx.Response:
    request = httpx.Request("GET", "http://cas.example:8080/v1/reconstructions/x")
    return httpx.Response(
        200, content=content, headers={"Content-Type": content_type}, request=request
    )


def test_a_msgpack_map_keeps_its_bytes_and_strings() -> None:
    body = {"terms": [1, 2], "arkfs_footers": {"ab": b"\x00\xff"}}
    assert msgpack_reply(reply(msgpack.packb(body, use_bin_type=True)), "it") == body


@pytest.mark.parametrize(
    "content, why",
    [
        (b"\xc1", "malformed msgpack"),  # a byte msgpack never uses
        (msgpack.packb({"a": 1}) + b"\x01", "malformed msgpack"),  # trailing data
        (msgpack.packb({"a": b"\xff"}, use_bin_type=False), "malformed msgpack"),  # not UTF-8
        (msgpack.packb({"a": 1})[:-1], "malformed msgpack"),  # truncated
        (msgpack.packb([1, 2]), "msgpack list, not an object"),
    ],
)
def test_what_is_no_msgpack_map_is_a_bad_reply_naming_the_origin(content: bytes, why: str) -> None:
    with pytest.raises(BadReply, match=f"reconstruction: http://cas.example:8080 sent {why}"):
        msgpack_reply(reply(content), "reconstruction")


def test_json_that_is_no_object_is_a_bad_reply() -> None:
    with pytest.raises(BadReply, match="sent JSON list, not an object"):
        json_reply(reply(b"[1]", "application/json"), "x")


def test_media_type_drops_parameters_and_case() -> None:
    assert media_type(reply(b"", "Application/JSON; charset=utf-8")) == "application/json"
    assert media_type(httpx.Response(200)) == ""
