"""Traffic in the lab, sent and captured only inside the lab's own namespaces: RoCEv2
frames (`roce`), one-shot runs of many flows (`engine`, `flows`), paced background
streams (`stream`) and tcpdump captures in a node (`capture`)."""

from twin.traffic.engine import Session, Tap, new_run_id
from twin.traffic.flood import Flood
from twin.traffic.flows import host_taps, hosts
from twin.traffic.meter import Meter, rates
from twin.traffic.results import StreamResult, summarise
from twin.traffic.roce import encapsulated
from twin.traffic.stream import Stream

__all__ = [
    "dcqcn",
    "encapsulated",
    "Flood",
    "flows",
    "frames",
    "host_taps",
    "hosts",
    "Meter",
    "new_run_id",
    "packets",
    "rates",
    "roce",
    "Session",
    "stream",
    "Stream",
    "StreamResult",
    "summarise",
    "Tap",
    "wording",
]
