"""A mount's JSON counters in the Prometheus text exposition format, for `arkfs stats
--prometheus`: its own module, so the mount daemon never imports prometheus_client."""

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from arkfs.mount.stats import COUNTERS, GAUGES, NOT_METRICS

PREFIX = "arkfs_mount_"


def exposition(data: dict[str, object], mountpoint: str) -> bytes:
    """The JSON counters of the mount at mountpoint in the Prometheus text format, for
    node_exporter's textfile collector: arkfs_mount_NAME, counters ending in _total, each
    with HELP and TYPE, labelled with the mountpoint."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(data, mountpoint))
    return generate_latest(registry)


class _Snapshot(Collector):
    """One reading of a mount's counters, as metric families."""

    def __init__(self, data: dict[str, object], mountpoint: str) -> None:
        self.data, self.mountpoint = data, mountpoint

    def collect(self) -> Iterable[Metric]:
        for name, value in sorted(self.data.items()):
            if name in NOT_METRICS or not isinstance(value, int):
                continue
            family: CounterMetricFamily | GaugeMetricFamily
            if name in COUNTERS:
                family = CounterMetricFamily(PREFIX + name, COUNTERS[name], labels=["mountpoint"])
            else:
                help = GAUGES.get(name, name.replace("_", " "))
                family = GaugeMetricFamily(PREFIX + name, help, labels=["mountpoint"])
            family.add_metric([self.mountpoint], value)
            yield family
