"""The outcome of a background stream, per flow: loss, outages, duplicates, reordering.

Pure: computed from the sequence numbers that arrived (`analyse`), and summed
over flows (`summarise`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from twin.traffic import roce


@dataclass
class StreamResult:
    """One flow's outcome. Times are seconds since the stream started, by sequence number:
    when the lost packets were due to be sent."""

    flow: roce.Flow
    tenant: str | None
    interval: float
    sent: int
    received: int  # unique sequence numbers that reached the destination
    lost: int
    duplicates: int
    reordered: int  # arrivals with a sequence number below one already seen
    longest_outage_s: float  # longest run of consecutive lost packets x interval
    outages: list[tuple[float, float]] = field(default_factory=list)  # (start, end) per run of losses
    first_loss_s: float | None = None
    last_loss_s: float | None = None
    send_errors: int = 0  # sends the kernel refused (e.g. link down): counted as sent, and lost
    icrc_bad: int = 0
    misdelivered: int = 0  # this flow's packets captured at another host

    @property
    def src(self) -> str:
        return self.flow.src

    @property
    def dst(self) -> str:
        return self.flow.dst

    @property
    def lossless(self) -> bool:
        return self.lost == 0 and not (self.duplicates or self.icrc_bad or self.misdelivered)


def analyse(
    flow: roce.Flow,
    sent: int,
    seqs: list[int],
    interval: float,
    tenant: str | None = None,
    due: Callable[[int], float] | None = None,
) -> StreamResult:
    """Per-flow outcome from the sequence numbers that arrived (in arrival order, 0 = first
    sent). `due(seq)` is when packet `seq` was due, in seconds since the start (default
    seq * interval). An outage is a run of consecutive lost sequence numbers, leading and
    trailing runs included; it lasts from the first lost packet's due time for len x interval."""
    due = due or (lambda n: n * interval)
    seen = bytearray(sent)
    received = duplicates = reordered = 0
    top = -1
    for n in seqs:
        if not 0 <= n < sent:
            continue  # never sent by this stream (cannot happen unless PSNs wrapped)
        if seen[n]:
            duplicates += 1
            continue
        seen[n] = 1
        received += 1
        if n < top:
            reordered += 1
        top = max(top, n)
    outages, longest = [], 0
    i = seen.find(0)
    while i != -1:
        j = seen.find(1, i)
        j = sent if j == -1 else j
        outages.append((due(i), due(i) + (j - i) * interval))
        longest = max(longest, j - i)
        i = seen.find(0, j)
    return StreamResult(
        flow=flow,
        tenant=tenant,
        interval=interval,
        sent=sent,
        received=received,
        lost=sent - received,
        duplicates=duplicates,
        reordered=reordered,
        longest_outage_s=longest * interval,
        outages=outages,
        first_loss_s=outages[0][0] if outages else None,
        last_loss_s=due(seen.rfind(0)) if outages else None,
    )


@dataclass(frozen=True)
class Summary:
    flows: int
    sent: int
    received: int
    lost: int
    flows_with_loss: int
    worst: StreamResult | None  # the flow with the longest outage (then the most lost)
    longest_outage_s: float
    first_loss_s: float | None
    last_loss_s: float | None


def summarise(results: list[StreamResult]) -> Summary:
    lossy = [r for r in results if r.lost]
    worst = max(lossy, key=lambda r: (r.longest_outage_s, r.lost), default=None)
    return Summary(
        flows=len(results),
        sent=sum(r.sent for r in results),
        received=sum(r.received for r in results),
        lost=sum(r.lost for r in results),
        flows_with_loss=len(lossy),
        worst=worst,
        longest_outage_s=worst.longest_outage_s if worst else 0.0,
        first_loss_s=min((t for r in lossy if (t := r.first_loss_s) is not None), default=None),
        last_loss_s=max((t for r in lossy if (t := r.last_loss_s) is not None), default=None),
    )
