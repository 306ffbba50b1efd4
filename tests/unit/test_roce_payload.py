"""The payload verify's RoCE flows carry: the pair's path MTU, as RDMA NICs choose it (the largest
InfiniBand MTU both hosts' ports carry less RoCE's headers), not 4 KiB whatever the hosts' MTU."""

from __future__ import annotations

from pathlib import Path

import yaml

from twin.topology.build import load, load_document
from twin.traffic import flows

ROOT = Path(__file__).resolve().parents[2]


def aipod(**defaults: int):
    doc = yaml.safe_load((ROOT / "topologies/aipod.yml").read_text())
    doc.setdefault("defaults", {}).update(defaults)
    return load_document(doc, "aipod.yml")


def test_a_jumbo_fabric_carries_4_kib_payloads():
    fabric = load(ROOT / "topologies/aipod.yml")
    assert flows.roce_payload(fabric, "host1a", "host2a") == 4096


def test_hosts_at_1500_carry_1024_byte_payloads_and_a_smaller_cap_is_kept():
    fabric = aipod(host_mtu=1500)
    assert flows.roce_payload(fabric, "host1a", "host2a") == 1024
    assert flows.roce_payload(fabric, "host1a", "host2a", largest=512) == 512


def test_hosts_at_2200_carry_2048_byte_payloads():
    doc = yaml.safe_load((ROOT / "topologies/aipod.yml").read_text())
    doc.setdefault("defaults", {})["host_mtu"] = 2200
    fabric = load_document(doc, "aipod.yml")
    assert flows.roce_payload(fabric, "host1a", "host2a") == 2048
