"""THUMP replies to an inflected ARK (`?info`, and the reserved `?` and `??`)."""

from http import HTTPStatus

from arkfs.ark.erc import Erc
from arkfs.ark.identifier import Ark

THUMP_VERSION = "0.6"
# The response header by which an arkfs server's /.well-known/ark tells clients that its
# ARKs are arkfs archives. IANA Considerations: the file itself holds only the service path
# (a strict client reads the whole body as the path), so nothing else may go in it.
ARKFS_HEADER = "X-Arkfs-Resolver"


def info_response(
    ark: Ark, record: Erc, *, service_path: str = "/", status: HTTPStatus = HTTPStatus.OK
) -> tuple[dict[str, str], str]:
    """HTTP headers and text body answering an inflected ark with its ERC record.

    service_path is the resolver's path ending in '/', as /.well-known/ark announces it.
    """
    # Overview of The HTTP URL Mapping Protocol (THUMP): the Link header says the reply
    # describes the uninflected ARK. The spec's example writes `<...> rel="describes";`;
    # this is the RFC 8288 form `<...>; rel="describes"`.
    headers = {
        "Content-Type": "text/plain; charset=utf-8",
        "THUMP-Status": f"{THUMP_VERSION} {status.value} {status.phrase}",
        "Link": f'<{service_path}{ark}>; rel="describes"',
    }
    return headers, record.to_anvl()
