"""Packet capture on a node's port, bounded in time and size, parsed with scapy.

    with Capture(lab.node("spine1"), "swp1", "udp port 4789") as cap:
        ... send traffic ...
    packets = cap.packets

tcpdump runs inside the node (or a tenant namespace in it) writing a pcap;
the capture counts as started once tcpdump has created that file, so no
packet sent after `__enter__` returns is missed.
"""
from __future__ import annotations

import io
import uuid

from scapy.utils import rdpcap

from twin import timeouts, wait
from twin.runtime.exec import NodeExec


class Capture:
    def __init__(self, ex: NodeExec, port: str, bpf: str = "", netns: str = "", max_packets: int = 10000):
        self.ex, self.port, self.bpf, self.netns = ex, port, bpf, netns
        self.max_packets = max_packets
        self.file = f"/tmp/twin-cap-{uuid.uuid4().hex[:8]}.pcap"
        self.packets: list = []

    def _cmd(self, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *cmd] if self.netns else cmd

    def __enter__(self) -> "Capture":
        tcpdump = self._cmd(["timeout", str(timeouts.CAPTURE_MAX), "tcpdump", "-i", self.port, "-nn", "-U", "--immediate-mode", "-s", "256",
                             "-c", str(self.max_packets), "-w", self.file, *self.bpf.split()])
        self.ex.container.exec_run(tcpdump, detach=True)
        # the pcap header is written once tcpdump listens
        wait.until(lambda: [] if self.ex.run(["test", "-s", self.file]).ok else [f"tcpdump on {self.port}"],
                   timeouts.CAPTURE_START, f"{self.ex.where}: capture start", first=0.05, cap=0.2)
        return self

    def __exit__(self, *exc) -> None:
        mine = f"^tcpdump .*{self.file}"  # not the `timeout` wrappers around pkill/pgrep themselves
        self.ex.run(["pkill", "-INT", "-f", mine])
        wait.until(lambda: [f"tcpdump on {self.port}"] if self.ex.run(["pgrep", "-f", mine]).ok else [],
                   timeouts.CAPTURE_START, f"{self.ex.where}: capture stop", first=0.05, cap=0.2)
        raw = self.ex.container.exec_run(["cat", self.file], demux=False).output
        self.ex.run(["rm", "-f", self.file])
        self.packets = list(rdpcap(io.BytesIO(raw))) if raw else []
