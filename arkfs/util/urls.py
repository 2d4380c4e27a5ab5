"""URLs as arkfs writes them down: never with a credential in them.

One rule for every place a URL is written (logs, extended attributes, cache records, trace
output): userinfo (`user:pw@`) is dropped, and so is a query string that carries a
signature or a token (signed xorb URLs' `sig`, pre-signed S3 and GCS URLs, CloudFront's,
`token=` and `access_token=`). The query is dropped whole, not just the parameter, since
the parameters around a signature (expiry, key id, credential scope) say who signed it.
"""

from urllib.parse import unquote_plus, urlsplit, urlunsplit

SECRET_PARAMS = frozenset(
    {"sig", "signature", "token", "access_token", "key-pair-id", "policy",
     "x-amz-signature", "x-amz-credential", "x-amz-security-token",
     "x-goog-signature", "x-goog-credential"}
)  # fmt: skip


def without_secrets(url: str) -> str:
    """url (a request target or an absolute URL) without userinfo, and without its query
    string when that carries a secret parameter."""
    parts = urlsplit(url)
    names = {unquote_plus(p.partition("=")[0]).lower() for p in parts.query.split("&")}
    query = "" if names & SECRET_PARAMS else parts.query
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
