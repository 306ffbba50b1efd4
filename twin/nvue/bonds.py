"""Bonds: NVUE's `interface.<bond>` of type bond with its `bond.member` ports, made a Linux bond
where the lab makes bonds, else stored with the notice (MLAG and EVPN multihoming are stored
either way).

A lab makes bonds when it was brought up with TWIN_NVUE_BONDS=on on a kernel that has bonding
(probed then, in a throwaway namespace: `twin.runtime.kernel.probe_bonds`; recorded in its state,
so day 2 builds the same planes); `twin doctor` says what a kernel without bonding changes. A bond
is made in the node's own namespace: where a namespace would hold it (the netns VRF backend, with the
bond in a tenant's or a plain VRF), it is stored with the notice: a Linux bond cannot move between
namespaces (--vrf-backend device keeps VRFs in the node's namespace).

As on Cumulus Linux: mode `lacp` is 802.3ad (LACP rate fast unless `lacp-rate slow`), `static` is
balance-xor; link monitoring every 100 ms, layer3+4 hashing, at least one link. The members go down,
into the bond, and the bond up, before anything uses it (a tenant's segment, a VLAN, an address);
the host cabled to a member is the bond's. Its steps run in the node by their iproute2 commands
(this project's kernel has no bonding: golden-tested, never run here).
"""

from __future__ import annotations

from typing import Iterator

from twin.config.backend import NETNS, Backend
from twin.config.steps import Step
from twin.nvue.model import NodeConf

ENV = "TWIN_NVUE_BONDS"  # "on" at `twin up`: the lab makes bonds, where the kernel has bonding
MODES = {"lacp": "802.3ad", "static": "balance-xor"}
Keyed = Iterator[tuple[tuple, Step]]


def vrf_of(conf: NodeConf, bond: str) -> str | None:
    """The VRF that holds a bond, other than the default one: its access VLAN's SVI's, or its own ip.vrf."""
    vlan = conf.access.get(bond)
    svi = conf.svis.get(vlan) if vlan is not None else None
    vrf = (svi.vrf if svi else None) or conf.routed.get(bond, (None, []))[0]
    return vrf if vrf not in (None, "default") else None


def made(conf: NodeConf, on: bool, backend: Backend) -> tuple[set[str], dict[str, str]]:
    """The bonds the node makes, and why each other one is stored only."""
    keep: dict[str, str] = {}
    for b in conf.bonds:
        vrf = vrf_of(conf, b)
        if not on:
            keep[b] = (
                f"bonds are made with {ENV}=on at `twin up`, on a kernel with bonding (`twin doctor` says "
                "whether this one has it)"
            )
        elif backend == NETNS and vrf is not None:
            keep[b] = (
                f"it sits in VRF {vrf}, a namespace on the netns VRF backend, and a Linux bond cannot move "
                "between namespaces (--vrf-backend device)"
            )
    return set(conf.bonds) - set(keep), keep


def problems(conf: NodeConf, ports: set[str]) -> list[tuple[tuple[str, ...], str]]:
    """What NVUE refuses of the bonds: a member that is no port of the node (`ports`: NVUE names that
    are), one in two bonds, one with a bridge or address of its own; a bond without members."""
    out: list[tuple[tuple[str, ...], str]] = []
    owner: dict[str, str] = {}
    for b, bond in sorted(conf.bonds.items()):
        if not bond.members:
            out.append((("interface", b, "bond", "member"), f"bond {b} has no member"))
        for m in bond.members:
            at = ("interface", b, "bond", "member", m)
            if m not in ports:
                out.append((at, f"{m} is no port of the node"))
            elif m in owner:
                out.append((at, f"{m} is a member of {owner[m]} already"))
            elif m in conf.access or m in conf.routed:
                out.append((at, f"{m} has a bridge or an address of its own: a member's are its bond's"))
            owner.setdefault(m, b)
    return out


def steps(conf: NodeConf, bonds: set[str], devices: dict[str, str]) -> Keyed:
    """Each bond made, its members (kernel names) down and in it, and the bond up."""
    for b in sorted(bonds):
        bond = conf.bonds[b]
        mode = MODES.get(bond.mode, MODES["lacp"])
        args = {
            "mode": mode,
            **({"lacp_rate": bond.lacp_rate} if mode == MODES["lacp"] else {}),
            "miimon": 100,
            "xmit_hash_policy": "layer3+4",
            "min_links": 1,
        }
        yield ("bond", b), Step("bond", b, args=args)
        for m in bond.members:
            yield ("bond-down", devices[m]), Step("down", devices[m])
            yield ("bond-member", devices[m]), Step("master", devices[m], args={"master": b})
        yield ("bond-up", b), Step("up", b)


def hosts_of(bond: str, conf: NodeConf, devices: dict[str, str]) -> list[str]:
    """The kernel ports whose cables lead to what a bond reaches: its members'."""
    return [devices[m] for m in conf.bonds[bond].members if m in devices]
