"""`GET /metrics`: what one `arkfs serve` has done and what its store holds, in the
Prometheus text exposition format (or OpenMetrics, when the scraper asks for it).

Read scope: any valid token, or anyone under --open-read. Each server has its own
CollectorRegistry, so several servers in one process never mix their counts. Requests are
counted by route template (`/ark:{rest:path}`, never the raw path), so the label values
stay few. The store figures are read at each scrape, in a worker thread.
"""

import threading
from collections.abc import Iterator

import trio
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from arkfs.server.auth import Authorizer, Scope
from arkfs.service.archive_service import ArchiveService

SERVED_KINDS = ("xorb", "file")  # xorb data through signed URLs; file (and tar) bodies
UPLOAD_KINDS = ("xorb", "shard", "bind")
UNMATCHED = "unmatched"  # the route label of a request no route matched
UPLOAD = "upload:"  # the prefix of the names of upload routes, before their kind
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


def upload_route(kind: str) -> str:
    """The name an upload route of kind (one of UPLOAD_KINDS) is declared with."""
    assert kind in UPLOAD_KINDS, kind
    return UPLOAD + kind


def upload_outcome(status: int) -> str:
    """How an upload ended: accepted (2xx), refused (4xx: bad input, token, size), failed."""
    return "accepted" if status < 300 else "refused" if status < 500 else "failed"


class Metrics:
    """The counters of one server, and its store's figures at each scrape."""

    def __init__(self, service: ArchiveService) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "arkfs_http_requests",
            "HTTP requests answered, by route template, method and status",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "arkfs_http_request_duration_seconds",
            "Time from a request's arrival to the end of its reply, by route template",
            ["route"],
            registry=self.registry,
            buckets=LATENCY_BUCKETS,
        )
        self.served = Counter(
            "arkfs_served_bytes",
            "Body bytes sent: xorb (signed xorb URLs) and file (resolver files and tars)",
            ["kind"],
            registry=self.registry,
        )
        self.uploads = Counter(
            "arkfs_uploads",
            "Uploads (xorbs, shards, binds) by outcome: accepted, refused (4xx), failed (5xx)",
            ["kind", "outcome"],
            registry=self.registry,
        )
        for kind in SERVED_KINDS:
            self.served.labels(kind)
        for kind in UPLOAD_KINDS:
            for outcome in ("accepted", "refused"):
                self.uploads.labels(kind, outcome)
        self.registry.register(_StoreCollector(service))

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def route(self, auth: Authorizer, limiter: trio.CapacityLimiter) -> Route:
        """`GET /metrics` (read scope), rendered in a worker thread (it reads the store)."""

        async def metrics(request: Request) -> Response:
            auth.require(request.headers.get("authorization"), Scope.READ)
            encode, media = choose_encoder(request.headers.get("accept", ""))
            body = await trio.to_thread.run_sync(encode, self.registry, limiter=limiter)
            return Response(body, headers={"Content-Type": media, "Cache-Control": "no-store"})

        return Route("/metrics", metrics)


class _StoreCollector:
    """The store's sizes and dedup ratio, read when scraped.

    The bytes of every bound version are summed again (one aggregate query, whatever the
    number of ARKs) only when the number of versions changed since the last scrape
    (versions never change once bound).
    """

    def __init__(self, service: ArchiveService) -> None:
        self.service = service
        self._archived = (-1, 0)  # (versions counted, their bytes)
        self._lock = threading.Lock()

    def _archived_bytes(self, versions: int) -> int:
        with self._lock:
            if self._archived[0] != versions:
                self._archived = (versions, self.service.store.archived_bytes())
            return self._archived[1]

    def collect(self) -> Iterator[Metric]:
        stats = self.service.store.stats()
        size = GaugeMetricFamily(
            "arkfs_store_bytes", "Bytes the store holds, by kind", labels=["kind"]
        )
        size.add_metric(["xorb"], stats.xorb_bytes)
        size.add_metric(["shard"], stats.shard_bytes)
        yield size
        objects = GaugeMetricFamily(
            "arkfs_store_objects", "Objects the store holds, by kind", labels=["kind"]
        )
        for kind, count in (
            ("xorb", stats.xorbs),
            ("shard", stats.shards),
            ("file", stats.files),
            ("dedup_chunk", stats.dedup_chunks),
            ("ark", stats.bindings),
            ("version", stats.versions),
        ):
            objects.add_metric([kind], count)
        yield objects
        archived = self._archived_bytes(stats.versions)
        yield GaugeMetricFamily(
            "arkfs_store_archived_bytes",
            "File bytes of every bound version of every archive",
            value=archived,
        )
        if stats.xorb_bytes:
            yield GaugeMetricFamily(
                "arkfs_store_dedup_ratio",
                "Archived bytes over stored xorb bytes (deduplication and compression together)",
                value=archived / stats.xorb_bytes,
            )
