"""Packet capture on a node's port, bounded in time and size, parsed with scapy.

    with Capture(lab.node("spine1"), "swp1", "udp port 4789") as cap:
        ... send traffic ...
    packets = cap.packets

tcpdump runs inside the node (or a tenant namespace in it) writing a pcap,
which twin reads through the node's root from the host; the capture counts as
started once tcpdump has written its header, so no packet sent after
`__enter__` returns is missed.
"""

from __future__ import annotations

import io
import subprocess
import uuid

from scapy.utils import rdpcap

from twin.base import timeouts, wait
from twin.runtime import NodeExec

MAX_PCAP_BYTES = 64 << 20  # 10000 packets of 256 bytes take 3 MiB


class Capture:
    def __init__(self, ex: NodeExec, port: str, bpf: str = "", netns: str = "", max_packets: int = 10000):
        self.ex, self.port, self.bpf, self.netns = ex, port, bpf, netns
        self.max_packets = max_packets
        self.file = f"/tmp/twin-cap-{uuid.uuid4().hex[:8]}.pcap"
        self.packets: list = []

    def _cmd(self, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *cmd] if self.netns else cmd

    def __enter__(self) -> "Capture":
        tcpdump = self._cmd(
            [
                "timeout",
                str(timeouts.CAPTURE_MAX),
                "tcpdump",
                "-i",
                self.port,
                "-nn",
                "-U",
                "--immediate-mode",
                "-s",
                "256",
                "-c",
                str(self.max_packets),
                "-w",
                self.file,
                *self.bpf.split(),
            ]
        )
        self.proc = self.ex.spawn(tcpdump)
        # the pcap header is written once tcpdump listens (read from the host: no process in the node)
        wait.until(
            lambda: [] if self.ex.file_size(self.file) else [f"tcpdump on {self.port}"],
            timeouts.CAPTURE_START,
            f"{self.ex.where}: capture start",
            first=0.02,
            cap=0.1,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.ex.run(["pkill", "-INT", "-f", f"^tcpdump .*{self.file}"])  # not the `timeout` wrapper
        try:
            self.proc.wait(timeout=timeouts.CAPTURE_START)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        try:  # read from the host, no link followed: the node could have put one at the file's name
            raw = self.ex.read_file(self.file, MAX_PCAP_BYTES) or b""
        finally:
            self.ex.remove_file(self.file)
        self.packets = list(rdpcap(io.BytesIO(raw))) if raw else []
