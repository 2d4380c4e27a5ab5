"""Bucket: the objects of a store in an S3-compatible bucket, through boto3, with typed errors.

boto3 is thread-safe and blocking, so callers run it in worker threads. Every call is
bounded: connect and read timeouts and at most two attempts, so no call waits forever.
Credentials come from the standard AWS chain (environment, ~/.aws files); they are never
part of a message. Keys are PREFIX + kind + '/' + hash string.
"""

import email.utils
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING
from urllib.parse import quote

import boto3
import botocore.auth
import botocore.awsrequest
import botocore.config
import botocore.exceptions

from arkfs.store.errors import NotFound, OutOfRange, StoreError

if TYPE_CHECKING:
    from botocore.credentials import ReadOnlyCredentials
    from mypy_boto3_s3 import S3Client

CONNECT_TIMEOUT = 5.0  # seconds to open a connection to the endpoint
READ_TIMEOUT = 30.0  # seconds without a byte before a call fails
ATTEMPTS = 2  # botocore retries a failed call once, with backoff
DEFAULT_REGION = "us-east-1"  # what S3-compatible stores accept when none is configured
_MISSING = {"NoSuchKey", "404", "NotFound"}
AWS_ENDPOINT = "https://s3.amazonaws.com"  # where path-style URLs go when no endpoint is set


def parse_location(location: str) -> tuple[str, str]:
    """The bucket and key prefix ('' or ending in '/') of s3://BUCKET[/PREFIX]."""
    if not location.startswith("s3://"):
        raise ValueError(f"{location!r} is not an s3://BUCKET[/PREFIX] location")
    bucket, _, prefix = location[len("s3://") :].partition("/")
    prefix = prefix.strip("/")
    if not bucket:
        raise ValueError(f"{location!r} names no bucket: use s3://BUCKET[/PREFIX]")
    return bucket, f"{prefix}/" if prefix else ""


class Bucket:
    """One bucket (and key prefix) at one S3 endpoint; safe to share between threads."""

    def __init__(
        self,
        bucket: str,
        prefix: str,
        endpoint: str | None,
        connections: int,
        public_endpoint: str | None = None,
    ) -> None:
        """Use Bucket.open. Pre-signed URLs name public_endpoint (default: endpoint)."""
        self.name, self.prefix, self.endpoint = bucket, prefix, endpoint
        self.public_endpoint = (public_endpoint or endpoint or AWS_ENDPOINT).rstrip("/")
        session = boto3.session.Session()
        self._session = session
        config = botocore.config.Config(
            connect_timeout=CONNECT_TIMEOUT,
            read_timeout=READ_TIMEOUT,
            retries={"total_max_attempts": ATTEMPTS, "mode": "standard"},
            max_pool_connections=connections,
            signature_version="s3v4",
            s3={"addressing_style": "path"},
        )
        self._client: S3Client = session.client(
            "s3",
            endpoint_url=endpoint,
            region_name=session.region_name or DEFAULT_REGION,
            config=config,
        )

    @classmethod
    def open(
        cls,
        location: str,
        endpoint: str | None,
        connections: int = 16,
        public_endpoint: str | None = None,
    ) -> "Bucket":
        """The bucket of s3://BUCKET[/PREFIX] at endpoint (None: AWS); StoreError unless it
        answers. Readers reach it at public_endpoint (default: endpoint)."""
        try:
            name, prefix = parse_location(location)
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        bucket = cls(name, prefix, endpoint, connections, public_endpoint)
        try:
            with bucket._errors("open the bucket"):
                bucket._client.head_bucket(Bucket=name)
        except NotFound:  # HEAD replies have no body, so no NoSuchBucket code either
            raise StoreError(bucket._no_bucket("open the bucket")) from None
        return bucket

    def ready(self) -> None:
        """The bucket answers (one HEAD)."""
        try:
            with self._errors("check the bucket"):
                self._client.head_bucket(Bucket=self.name)
        except NotFound:
            raise StoreError(self._no_bucket("check the bucket")) from None

    def _no_bucket(self, what: str) -> str:
        return (
            f"{what}: there is no bucket {self.name}{self._at()}; create it, "
            "or check the s3:// location"
        )

    def where(self) -> str:
        """The bucket, prefix and endpoint, for messages."""
        at = f" at {self.endpoint}" if self.endpoint else ""
        return f"s3://{self.name}/{self.prefix}{at}"

    @contextmanager
    def _errors(self, what: str, key: str = "") -> Iterator[None]:
        """boto3's errors as store errors that say what to do."""
        try:
            yield
        except botocore.exceptions.ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            if code in _MISSING:
                raise NotFound(f"{key or self.name}: not in {self.where()}") from None
            if code == "InvalidRange":
                raise OutOfRange(f"{key}: the range is not within the object") from None
            if code == "NoSuchBucket":
                raise StoreError(self._no_bucket(what)) from None
            raise StoreError(
                f"{what}: {self.where()} answered {code or 'an error'} "
                f"({error.get('Message', '')}); check the bucket's permissions and credentials"
            ) from None
        except botocore.exceptions.NoCredentialsError:
            raise StoreError(
                f"{what}: no S3 credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
                "or a profile in ~/.aws/credentials"
            ) from None
        except botocore.exceptions.BotoCoreError as exc:
            raise StoreError(
                f"{what}: the S3 endpoint{self._at()} is unreachable ({type(exc).__name__}); "
                "check --s3-endpoint and that the object store is up"
            ) from None

    def _at(self) -> str:
        return f" at {self.endpoint}" if self.endpoint else ""

    def key(self, kind: str, name: str) -> str:
        """The key of object name (a hash string) of kind (xorbs, shards)."""
        return f"{self.prefix}{kind}/{name}"

    def size(self, key: str) -> int | None:
        """The size of the object at key, or None if there is none."""
        try:
            with self._errors("look up an object", key):
                head = self._client.head_object(Bucket=self.name, Key=key)
        except NotFound:
            return None
        return int(head["ContentLength"])

    def put(self, key: str, data: bytes) -> None:
        """Store data at key; durable once this returns (S3 acknowledges only durable PUTs)."""
        with self._errors("store an object", key):
            self._client.put_object(
                Bucket=self.name, Key=key, Body=data, ContentType="application/octet-stream"
            )

    def get(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        """Bytes [start, end) of the object at key (all of it when start is None)."""
        with self._errors("read an object", key):
            if start is None:
                reply = self._client.get_object(Bucket=self.name, Key=key)
            else:
                rng = f"bytes={start}-{(end or start) - 1}"
                reply = self._client.get_object(Bucket=self.name, Key=key, Range=rng)
            return reply["Body"].read()

    def delete(self, key: str) -> None:
        """Remove the object at key (tests and repairs only: stored objects never change)."""
        with self._errors("remove an object", key):
            self._client.delete_object(Bucket=self.name, Key=key)

    def holds(self, kind: str) -> bool:
        """Is there any object of kind (one short listing)?"""
        with self._errors(f"list the {kind}"):
            reply = self._client.list_objects_v2(
                Bucket=self.name, Prefix=f"{self.prefix}{kind}/", MaxKeys=1
            )
        return bool(reply.get("Contents"))

    def names(self, kind: str) -> Iterator[tuple[str, int]]:
        """(name, size) of every object of kind, in key order."""
        for name, size, _ in self.written(kind):
            yield name, size

    def written(self, kind: str) -> Iterator[tuple[str, int, float]]:
        """(name, size, when written as Unix time) of every object of kind, in key order."""
        under = f"{self.prefix}{kind}/"
        with self._errors(f"list the {kind}"):
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self.name, Prefix=under
            )
            for page in pages:
                for obj in page.get("Contents", []):
                    when = obj["LastModified"].timestamp()
                    yield obj["Key"][len(under) :], int(obj["Size"]), when

    def presign(self, key: str, ttl: int, now: float | None = None) -> str:
        """A pre-signed GET URL of key at the public endpoint, valid for ttl seconds at least;
        its replies carry caching headers bounded by that lifetime (HTTP Caching Headers).
        Signing is local: no request.

        The signing time is now rounded down to a window of ttl / 3, and the URL stays valid
        for ttl + window from then, so every reader within one window gets the same URL and a
        site cache (squid), which keys on the whole URL, can hit."""
        window = max(1, ttl // 3)
        signed = int(now if now is not None else time.time())
        signed -= signed % window
        lifetime = ttl + window
        expires = email.utils.formatdate(signed + lifetime, usegmt=True)
        request = botocore.awsrequest.AWSRequest(
            method="GET",
            url=f"{self.public_endpoint}/{quote(self.name)}/{quote(key, safe='/~')}",
            params={
                "response-cache-control": f"public, immutable, max-age={ttl}",
                "response-expires": expires,
            },
        )
        with self._errors("sign a URL", key):
            credentials = self._session.get_credentials()
            if credentials is None:
                raise botocore.exceptions.NoCredentialsError()
            frozen = credentials.get_frozen_credentials()
            _SignedAt(frozen, self._client.meta.region_name, lifetime, signed).add_auth(request)
        return request.prepare().url


class _SignedAt(botocore.auth.S3SigV4QueryAuth):
    """SigV4 query signing (Signature Version 4: query string) at a given time, not now."""

    def __init__(
        self, credentials: "ReadOnlyCredentials", region: str, expires: int, when: int
    ) -> None:
        super().__init__(credentials, "s3", region, expires)
        self._timestamp = time.strftime(botocore.auth.SIGV4_TIMESTAMP, time.gmtime(when))

    def _modify_request_before_signing(self, request: botocore.awsrequest.AWSRequest) -> None:
        request.context["timestamp"] = self._timestamp  # add_auth set it to now
        super()._modify_request_before_signing(request)  # type: ignore[misc]  # not in stubs
