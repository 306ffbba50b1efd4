"""The config mistakes `twin lint` names (issue 45), one per class, as an operator makes them in
twin's own configs of the default lab: its NVUE export (`twin export --format nvue`) and its
rendered frr.conf files (the form `twin up --configs` takes). Each is one edit of one node's
file (`old` -> `new`, every occurrence where `count` says so); the unit tests lint each one
(tests/golden/lint/), the e2e tests bring some up."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from twin import nvue, topology
from twin.config.render import render_lab

ROOT = Path(__file__).resolve().parents[1]
AIPOD = ROOT / "topologies" / "aipod.yml"
GOLDEN = ROOT / "tests" / "golden" / "lint"


@dataclass(frozen=True)
class Mistake:
    name: str
    node: str
    old: str
    new: str
    what: str  # in words

    def apply(self, text: str) -> str:
        """The text with the mistake made (at the first place `old` is)."""
        assert self.old in text, (self.name, self.node, self.old)
        return text.replace(self.old, self.new, 1)


def _vrf_vni(vrf: str, vni: int) -> str:
    return f"      {vrf}:\n        evpn:\n          enable: on\n          vni:\n            '{vni}': {{}}\n"


NVUE = [
    Mistake(
        "vlan-vni",
        "dpu1",
        "            '20':\n              vni:\n                '10102': {}\n",
        "            '20':\n              vni:\n                '10202': {}\n",
        "a VLAN mapped to the other tenant's VNI (red's db VLAN to blue's db VNI)",
    ),
    Mistake(
        "l3vni-swap",
        "dpu2",
        _vrf_vni("red", 10100),
        _vrf_vni("red", 10200),
        "two L3VNIs swapped (red's VRF with blue's L3VNI, and blue's with red's)",
    ),
    Mistake(
        "svi-vrf",
        "dpu1",
        "        vlan: 20\n        ip:\n          vrf: red\n",
        "        vlan: 20\n        ip:\n          vrf: blue\n",
        "an SVI in the wrong VRF (red's db SVI in blue's)",
    ),
    Mistake(
        "access-vlan",
        "dpu1",
        "      pf0vf0_if:\n        type: swp\n        bridge:\n          domain:\n"
        "            br_default:\n              access: 10\n",
        "      pf0vf0_if:\n        type: swp\n        bridge:\n          domain:\n"
        "            br_default:\n              access: 30\n",
        "an access port in the wrong VLAN (red's web host in blue's web VLAN)",
    ),
    Mistake(
        "vtep-source",
        "dpu2",
        "          address: 10.255.0.6\n",
        "          address: 10.255.0.9\n",
        "a wrong VTEP source address",
    ),
    Mistake(
        "evpn-off", "dpu2", "    evpn:\n      enable: on\n", "    evpn:\n      enable: off\n", "EVPN off on a VTEP"
    ),
    Mistake(
        "loopback-not-advertised",
        "spine2",
        "                network:\n                  10.255.0.2/32: {}\n",
        "                network: {}\n",
        "a loopback not advertised",
    ),
    Mistake(
        "missing-neighbor",
        "leaf2",
        "              swp3:\n                type: unnumbered\n                peer-group: fabric\n",
        "",
        "a missing neighbor (leaf2's to dpu1)",
    ),
    Mistake(
        "spine-asn", "spine1", "autonomous-system: 65000\n", "autonomous-system: 65101\n", "a spine with a leaf's ASN"
    ),
    Mistake(
        "ecmp-off",
        "dpu1",
        "            path-selection:\n              multipath:\n                aspath-ignore: on\n",
        "",
        "ECMP off (no multipath relax on a dual-homed VTEP)",
    ),
]
# the second half of the swap: blue's VRF takes red's L3VNI (applied after `l3vni-swap`)
SWAP_BACK = Mistake("l3vni-swap", "dpu2", _vrf_vni("blue", 10200), _vrf_vni("blue", 10100), "")

FRR = [
    Mistake(
        "l3vni-swap",
        "dpu1",
        "vrf red\n vni 10100\nexit-vrf\n!\nvrf blue\n vni 10200\n",
        "vrf red\n vni 10200\nexit-vrf\n!\nvrf blue\n vni 10100\n",
        "two L3VNIs swapped",
    ),
    Mistake(
        "route-target-leak",
        "dpu1",
        "  advertise ipv4 unicast\n",
        "  advertise ipv4 unicast\n  route-target import 65000:10200\n  route-target import 65000:10100\n",
        "red's VRF importing blue's route target",
    ),
    Mistake(
        "route-target-wrong",
        "dpu1",
        "  advertise ipv4 unicast\n",
        "  advertise ipv4 unicast\n  route-target import 65000:999\n",
        "red's VRF importing none of its own",
    ),
    Mistake(
        "import-vrf",
        "dpu1",
        "router bgp 4200000001 vrf red\n bgp router-id 10.255.0.5\n address-family ipv4 unicast\n",
        "router bgp 4200000001 vrf red\n bgp router-id 10.255.0.5\n address-family ipv4 unicast\n  import vrf blue\n",
        "red's VRF importing blue's VRF",
    ),
    Mistake(
        "peer-interface",
        "leaf1",
        " neighbor swp1 interface",
        " neighbor swp9 interface",
        "a neighbor on the wrong port",
    ),
    Mistake("advertise-all-vni", "dpu2", "  advertise-all-vni\n", "", "EVPN off on a VTEP"),
    Mistake("no-type5", "dpu2", "  advertise ipv4 unicast\n", "", "a VRF not exported to EVPN (red's, the first)"),
    Mistake(
        "maximum-paths",
        "dpu1",
        "  network 10.255.0.5/32\n",
        "  network 10.255.0.5/32\n  maximum-paths 1\n",
        "ECMP off (one path kept)",
    ),
    Mistake("spine-asn", "spine2", "router bgp 65000\n", "router bgp 65102\n", "a spine with a leaf's ASN"),
    Mistake("evpn-not-activated", "leaf2", "  neighbor fabric activate\n", "", "EVPN not activated on a leaf"),
]


# the class of finding each mistake must raise (`twin.lint.Finding.rule`)
RULES = {
    "vlan-vni": "vlan-vni",
    "l3vni-swap": "l3vni",
    "svi-vrf": "svi-vrf",
    "access-vlan": "access-vlan",
    "vtep-source": "vtep-source",
    "evpn-off": "evpn",
    "loopback-not-advertised": "loopback",
    "missing-neighbor": "neighbor",
    "spine-asn": "asn",
    "ecmp-off": "ecmp",
    "route-target-leak": "leak",
    "route-target-wrong": "leak",
    "import-vrf": "leak",
    "peer-interface": "neighbor",
    "advertise-all-vni": "evpn",
    "no-type5": "evpn",
    "maximum-paths": "ecmp",
    "evpn-not-activated": "evpn",
}


def nvue_files() -> dict[str, str]:
    """The default lab's NVUE export: node -> startup.yaml."""
    return nvue.export(topology.load(AIPOD))[0]


def frr_files() -> dict[str, str]:
    """The default lab's rendered frr.conf files: node -> text."""
    return {n: f["frr.conf"] for n, f in render_lab(topology.load(AIPOD), "netns").items() if "frr.conf" in f}


def with_mistakes(dialect: str, names: list[str]) -> dict[str, str]:
    """The default lab's files of `dialect` (nvue, frr) with these mistakes in them: node -> text."""
    cases, files = (NVUE, nvue_files()) if dialect == "nvue" else (FRR, frr_files())
    for name in names:
        m = next(m for m in cases if m.name == name)
        files[m.node] = m.apply(files[m.node])
        if (dialect, name) == ("nvue", "l3vni-swap"):
            files[m.node] = SWAP_BACK.apply(files[m.node])
    return files


def node_of(dialect: str, name: str) -> str:
    return next(m.node for m in (NVUE if dialect == "nvue" else FRR) if m.name == name)


def write_dir(d: Path, dialect: str, mistakes: list[str]) -> Path:
    """A config directory of the default lab (its NVUE export, or its rendered frr.conf files)
    with these mistakes in it."""
    name = nvue.STARTUP if dialect == "nvue" else "frr.conf"
    for node, text in with_mistakes(dialect, mistakes).items():
        (d / node).mkdir(parents=True, exist_ok=True)
        (d / node / name).write_text(text)
    return d
