"""What crossing a provider boundary costs: links (bandwidth, latency) and the metrics blame and whatif compare.
"""

import re
from dataclasses import dataclass

from ..errors import UsageError
from ..rules.providers import CPU

__all__ = ["Link", "LINK_PRESETS", "parse_link", "metrics", "copy_time_us", "METRIC_KEYS"]


@dataclass(frozen=True)
class Link:
    """A host<->device link: bandwidth in bytes/s per direction, latency in seconds per copy."""

    name: str
    bandwidth: float
    latency: float
    source: str = "given on the command line"

    def to_json(self):
        return {"name": self.name, "bandwidthBytesPerSecond": self.bandwidth,
                "latencyMicroseconds": round(self.latency * 1e6, 6), "source": self.source}


# Named links.  Bandwidths are per direction, from the standards named; the per-copy
# latencies are NOT in those standards: they are stated assumptions (order of magnitude of
# one copy call plus its synchronisation), to be replaced by --link BW,LAT with measured values.
LINK_PRESETS = {
    # PCIe 3.0: 8 GT/s x 16 lanes, 128b/130b encoding -> 15.75 GB/s (PCI-SIG PCIe Base Spec 3.0)
    "pcie3-x16": Link("pcie3-x16", 8e9 * 16 * 128 / 130 / 8, 8e-6,
                      "PCI-SIG PCI Express Base Specification 3.0: 8 GT/s x16, 128b/130b = 15.75 GB/s per "
                      "direction; 8 us per copy is an assumption"),
    # PCIe 4.0: 16 GT/s x 16 lanes, 128b/130b -> 31.5 GB/s (PCI-SIG PCIe Base Spec 4.0)
    "pcie4-x16": Link("pcie4-x16", 16e9 * 16 * 128 / 130 / 8, 8e-6,
                      "PCI-SIG PCI Express Base Specification 4.0: 16 GT/s x16, 128b/130b = 31.5 GB/s per "
                      "direction; 8 us per copy is an assumption"),
    # PCIe 5.0: 32 GT/s x 16 lanes, 128b/130b -> 63.0 GB/s (PCI-SIG PCIe Base Spec 5.0)
    "pcie5-x16": Link("pcie5-x16", 32e9 * 16 * 128 / 130 / 8, 8e-6,
                      "PCI-SIG PCI Express Base Specification 5.0: 32 GT/s x16, 128b/130b = 63.0 GB/s per "
                      "direction; 8 us per copy is an assumption"),
    # Mobile SoC, CPU and accelerator share LPDDR5 DRAM: a copy is a DRAM-to-DRAM memcpy.
    # LPDDR5-6400 on a 64-bit bus peaks at 6400 MT/s x 8 B = 51.2 GB/s (JEDEC JESD209-5);
    # a copy reads and writes every byte, so half of that.
    "mobile-soc": Link("mobile-soc", 6400e6 * 8 / 2, 1e-6,
                       "JEDEC JESD209-5 LPDDR5-6400, 64-bit bus: 51.2 GB/s peak, halved because a copy in "
                       "shared memory reads and writes each byte = 25.6 GB/s; 1 us per copy is an assumption"),
}


_BW_UNITS = {"b/s": 1, "kb/s": 1e3, "mb/s": 1e6, "gb/s": 1e9, "tb/s": 1e12,
             "kib/s": 1024, "mib/s": 1024**2, "gib/s": 1024**3, "tib/s": 1024**4,
             "gbit/s": 1e9 / 8, "mbit/s": 1e6 / 8, "gbps": 1e9 / 8, "mbps": 1e6 / 8}


_LAT_UNITS = {"s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


_NUMBER = r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"


def parse_link(text):
    """A preset name or ``BANDWIDTH[,LATENCY]`` -> :class:`Link`.

    Examples
    --------
    >>> parse_link("12GB/s,8us").bandwidth, parse_link("12GB/s,8us").latency
    (12000000000.0, 8e-06)
    >>> round(parse_link("pcie4-x16").bandwidth / 1e9, 2)
    31.51
    """
    raw = str(text).strip()
    if raw.lower() in LINK_PRESETS:
        return LINK_PRESETS[raw.lower()]
    parts = [p.strip() for p in raw.split(",")]
    if not parts or len(parts) > 2 or not parts[0]:
        raise UsageError(f"--link {raw!r}: expected BANDWIDTH[,LATENCY] (e.g. 12GB/s,8us) or one of "
                         f"{', '.join(sorted(LINK_PRESETS))}")
    m = re.fullmatch(_NUMBER + r"\s*([A-Za-z/]+)", parts[0])
    if not m or m.group(2).lower() not in _BW_UNITS:
        raise UsageError(f"--link {raw!r}: bandwidth {parts[0]!r} is not a number with a unit "
                         f"({', '.join(sorted(_BW_UNITS))})")
    bandwidth = float(m.group(1)) * _BW_UNITS[m.group(2).lower()]
    latency = 0.0
    if len(parts) == 2:
        m = re.fullmatch(_NUMBER + r"\s*([a-zµ]+)", parts[1])
        if not m or m.group(2) not in _LAT_UNITS:
            raise UsageError(f"--link {raw!r}: latency {parts[1]!r} is not a number with a unit "
                             f"({', '.join(sorted(_LAT_UNITS))})")
        latency = float(m.group(1)) * _LAT_UNITS[m.group(2)]
    if bandwidth <= 0:
        raise UsageError(f"--link {raw!r}: bandwidth must be positive")
    return Link(raw, bandwidth, latency)


METRIC_KEYS = ("partitions", "acceleratorPartitions", "fragments", "transfers", "memcpy", "memcpyFromHost",
               "memcpyToHost", "boundaryBytes", "copies", "unsizedCopies", "feedTransfers", "feedBytes",
               "delegatedNodes")


def copy_time_us(m, link):
    """Estimated copy time per inference (microseconds) of a :func:`metrics` dict over ``link``."""
    if link is None:
        return None
    t = m["boundaryBytes"] / link.bandwidth + m["copies"] * link.latency
    return round(t * 1e6, 3)


def metrics(summary, model, link=None, device_providers=None):
    """The counts blame and whatif compare, from one partitionSummary.

    ``partitions`` counts every partition of the summary (CPU ones included: they are what
    splits the accelerator's work); ``acceleratorPartitions`` is ``partitionCount``.
    ``device_providers``: providers whose graph inputs are copied at feed time (those not
    CPU-based, as ``feedTransfers`` counts them); default every provider but the CPU.
    """
    transfer_tensors = set()
    sizes = []
    for t in summary["transferList"]:
        transfer_tensors.add(t["tensor"])
        sizes.append(t["bytes"])
    for c in summary["memcpy"]["tensors"]:
        if c["tensor"] not in transfer_tensors:
            sizes.append(model.value(c["tensor"]).nbytes)
    feed = 0
    accel = (set(device_providers) if device_providers is not None
             else {ep for ep in summary["perProvider"] if ep != CPU})
    seen = set()
    for n in model.graph_inputs:
        # graph inputs consumed on a non-CPU provider are copied at feed time (feedTransfers)
        for c in model.consumers.get(n, ()):
            ep = summary["nodes"][c]["provider"]
            if ep in accel and (n, ep) not in seen:
                seen.add((n, ep))
                feed += model.value(n).nbytes or 0
    mc = summary["memcpy"]
    m = {
        "partitions": len(summary["partitions"]),
        "acceleratorPartitions": summary["partitionCount"],
        "fragments": summary["fragments"],
        "transfers": summary["transfers"],
        "memcpy": mc["fromHost"] + mc["toHost"],
        "memcpyFromHost": mc["fromHost"],
        "memcpyToHost": mc["toHost"],
        "boundaryBytes": sum(s for s in sizes if s is not None),
        "copies": len(sizes),
        "unsizedCopies": sum(1 for s in sizes if s is None),
        "feedTransfers": summary["feedTransfers"],
        "feedBytes": feed,
        "delegatedNodes": summary["delegatedNodeCount"],
    }
    if link is not None:
        m["copyTimeUs"] = copy_time_us(m, link)
    return m


def _saved(before, after):
    out = {k: before[k] - after[k] for k in METRIC_KEYS}
    if "copyTimeUs" in before and "copyTimeUs" in after:
        out["copyTimeUs"] = round(before["copyTimeUs"] - after["copyTimeUs"], 3)
    return out
