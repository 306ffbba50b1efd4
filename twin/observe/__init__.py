"""Eyes on a running lab (NetQ-like): counters, "what just happened" events, a timeline.

- `nflog`: a raw NETLINK_NETFILTER reader of the packets twin's drop rules log;
- `packets`, `reasons`: their headers, and why each was dropped, in words;
- `roce`: the per-node nftables table of RoCEv2 counters (per port, DSCP, ECN; CNPs);
- `sample`: one round of readings (netlink link stats and routes, the RoCE table,
  FRR's sessions and VNIs on a slower cadence) into a `Snapshot`;
- `timeline`: state changes between two snapshots, as events;
- `store`: the bounded on-disk event store of a lab (its directory), appended to by
  the collector and by twin's own actions (apply stages, faults);
- `collector`: all of it on a thread while a lab runs;
- `view`, `metrics`, `web`: the terminal view, the Prometheus exporter, the web page.
"""

from twin.observe.collector import Collector

__all__ = ["Collector", "metrics", "store", "view", "web"]
