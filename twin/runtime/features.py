"""What this kernel offers twin, probed at run time in one throwaway namespace (`twin doctor`).

Each feature is tried for real in a new, empty network namespace of its own (`netns.scratch`:
gone with the thread that made it, so nothing is left behind): a device made, a qdisc or a
filter put on a veth, an nftables ruleset loaded (with the host's `nft`, in that namespace).
A probe answers True (the kernel did it), False (the kernel refused it: no such device type,
qdisc or classifier) or None (could not tell, e.g. no `nft` on the host).

The RED qdisc has no pyroute2 plugin: it is asked for without options, which a kernel with RED
refuses as invalid (EINVAL) and one without it as unknown (ENOENT).
"""

from __future__ import annotations

import errno
import shutil
import subprocess
from typing import Callable

from pyroute2 import IPRoute, NetlinkError
from pyroute2.netlink.generic import GenericNetlinkSocket

from twin.runtime import netns

# key -> what it is (the kernel's words, the option that gives it)
FEATURES: dict[str, str] = {
    "bridge": "Linux bridges (CONFIG_BRIDGE)",
    "veth": "veth pairs (CONFIG_VETH)",
    "vxlan": "VXLAN devices (CONFIG_VXLAN)",
    "vrf": "VRF devices (CONFIG_NET_VRF)",
    "dummy": "dummy interfaces (CONFIG_DUMMY)",
    "vlan": "802.1Q VLAN interfaces (CONFIG_VLAN_8021Q)",
    "bond": "Linux bonds (CONFIG_BONDING)",
    "netem": "the netem qdisc (CONFIG_NET_SCH_NETEM)",
    "red": "the RED qdisc (CONFIG_NET_SCH_RED)",
    "fq_codel": "the fq_codel qdisc (CONFIG_NET_SCH_FQ_CODEL)",
    "matchall": "the tc matchall classifier (CONFIG_NET_CLS_MATCHALL)",
    "nft_nat": "nftables NAT (CONFIG_NFT_NAT, masquerade)",
    "nft_log": "nftables `log group` (CONFIG_NFT_LOG, NFLOG)",
    "drop_monitor": "drop_monitor (CONFIG_NET_DROP_MONITOR, generic netlink NET_DM)",
}
ABSENT = (errno.EOPNOTSUPP, errno.ENOENT, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT)
NAT_RULESET = "table ip twin_probe {\n chain post { type nat hook postrouting priority 100; masquerade; }\n}\n"
LOG_RULESET = "table ip twin_probe_log {\n chain in { type filter hook input priority 0; log group 7; }\n}\n"


def _try(fn: Callable[[], object], invalid_means_present: bool = False) -> bool | None:
    try:
        fn()
        return True
    except NetlinkError as e:
        if e.code in ABSENT:
            return False
        return True if invalid_means_present and e.code == errno.EINVAL else None


def _links(ipr: IPRoute) -> dict[str, bool | None]:
    out = {
        "bridge": _try(lambda: ipr.link("add", ifname="pbr", kind="bridge")),
        "veth": _try(lambda: ipr.link("add", ifname="pv0", kind="veth", peer="pv1")),
        "vxlan": _try(lambda: ipr.link("add", ifname="pvx", kind="vxlan", vxlan_id=42, vxlan_port=4789)),
        "vrf": _try(lambda: ipr.link("add", ifname="pvrf", kind="vrf", vrf_table=4242)),
        "dummy": _try(lambda: ipr.link("add", ifname="pdummy", kind="dummy")),
    }
    lower = ipr.link_lookup(ifname="pbr") or ipr.link_lookup(ifname="lo")
    out["vlan"] = _try(lambda: ipr.link("add", ifname="pvlan", kind="vlan", link=lower[0], vlan_id=42))
    out["bond"] = _try(lambda: ipr.link("add", ifname="pbond", kind="bond", bond_mode=4))
    return out


def _tc(ipr: IPRoute) -> dict[str, bool | None]:
    found = ipr.link_lookup(ifname="pv0")
    if not found:
        return {k: None for k in ("netem", "red", "fq_codel", "matchall")}
    ix = found[0]

    def qdisc(kind: str, **kw: object) -> bool | None:
        ok = _try(lambda: ipr.tc("replace", kind, ix, 0x10000, **kw), invalid_means_present=kind == "red")
        if ok:
            _try(lambda: ipr.tc("del", index=ix, handle=0x10000, parent=0xFFFFFFFF))
        return ok

    out = {"netem": qdisc("netem", loss=1), "red": qdisc("red"), "fq_codel": qdisc("fq_codel")}
    _try(lambda: ipr.tc("add", "ingress", ix, 0xFFFF0000))
    out["matchall"] = _try(
        lambda: ipr.tc(
            "add-filter", "matchall", ix, parent=0xFFFF0000, prio=2, action={"kind": "gact", "action": "drop"}
        )
    )
    return out


def _nft() -> dict[str, bool | None]:
    nft = shutil.which("nft")
    if not nft:
        return {"nft_nat": None, "nft_log": None}

    def load(ruleset: str) -> bool:
        p = subprocess.run([nft, "-f", "-"], input=ruleset, capture_output=True, text=True, timeout=10)
        return p.returncode == 0

    return {"nft_nat": load(NAT_RULESET), "nft_log": load(LOG_RULESET)}


def drop_monitor() -> bool | None:
    """Whether the kernel has drop_monitor (generic netlink family NET_DM); None: netlink did not answer."""
    s = GenericNetlinkSocket()
    try:
        s.discovery("NET_DM")
        return True
    except NetlinkError:
        return False
    except OSError:
        return None
    finally:
        s.close()


def probe(what: str = "doctor") -> dict[str, bool | None]:
    """Every feature of FEATURES, tried in one throwaway namespace (`what` names it in errors)."""

    def run() -> dict[str, bool | None]:
        with netns.here() as ipr:  # requests with deadlines
            out = _links(ipr)
            out |= _tc(ipr)
        return out | _nft() | {"drop_monitor": drop_monitor()}

    return netns.probe(what, run)
