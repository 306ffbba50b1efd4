"""`nv show service lldp` and `nv show interface X lldp`: LLDP as the node's lldpd runs it (issue 44,
`twin.nvue.lldp`), read from it (`lldpcli -f json0`, one exec): its timers, beside what the applied
configuration sets and lldpd does not run (`dot1-tlv`, `mode`...: NVUE shows the applied value where
there is no operational one; listed under `twin` as stored), and per port the neighbours
it sees, each by its system name, in NVUE's words (chassis: id, system name and description, management
addresses; port: name, type, description, TTL; age). lldpd runs in the node's own namespace: a port twin
put in a tenant's or a plain VRF's namespace is said to be out of its sight.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Iterable

from twin.lifecycle.context import LabContext
from twin.runtime import LldpNeighbor, read_lldpd

RUN = ("tx-interval", "tx-hold-multiplier")  # what of `service lldp` lldpd runs (twin.nvue.lldp)


def service_shown(ctx: LabContext, node: str, applied: dict) -> dict:
    """The node's lldpd: its timers (NVUE's names), the rest of `applied` (the node's applied `service
    lldp`) as set, and under `twin` the system name lldpd sends, the TTL and which keys are stored only."""
    d = read_lldpd(ctx.exec(node))
    return {
        "tx-interval": d.tx_interval,
        "tx-hold-multiplier": d.tx_hold,
        **stored(applied),
        "twin": {
            "system-name": d.system_name,
            "ttl": d.tx_interval * d.tx_hold,
            **({"stored": sorted(stored(applied))} if stored(applied) else {}),
        },
    }


def stored(applied: dict) -> dict:
    """What of the applied `service lldp` lldpd does not run, in NVUE's words (`on`/`off`, not true/false)."""
    return {k: _words(v) for k, v in sorted(applied.items()) if k not in RUN}


def _words(v: Any) -> Any:
    if isinstance(v, bool):
        return "on" if v else "off"
    return {k: _words(x) for k, x in v.items()} if isinstance(v, dict) else v


def ports_shown(ctx: LabContext, node: str, where: dict[str, tuple[str, str]], ports: Iterable[str]) -> dict:
    """NVUE port name -> its `lldp`: the neighbours lldpd sees on it, by system name (`where`: each NVUE
    interface's namespace and kernel device; `ports`: the ones that are ports)."""
    d = read_lldpd(ctx.exec(node))
    out: dict[str, Any] = {}
    for name in sorted(ports):
        ns, dev = where.get(name, ("", name))
        if ns:
            out[name] = {"twin": {"note": f"not seen by lldpd: it runs in the node's own namespace, {dev} in {ns}"}}
            continue
        out[name] = {"neighbor": {n.name or n.chassis_id: neighbor_shown(n) for n in d.neighbors.get(dev, [])}}
    return out


def neighbor_shown(n: LldpNeighbor) -> dict:
    v4 = [a for a in n.mgmt if _version(a) == 4]
    v6 = [a for a in n.mgmt if _version(a) == 6]
    return {
        "age": n.age,
        "chassis": {
            "chassis-id": n.chassis_id,
            "system-name": n.name,
            "system-description": n.descr,
            "management-address-ipv4": v4[0] if v4 else None,
            "management-address-ipv6": v6[0] if v6 else None,
        },
        "port": {"name": n.port, "type": n.port_type, "description": n.port_descr, "ttl": n.ttl},
        "twin": {"via": n.via},
    }


def _version(address: str) -> int:
    try:
        return ipaddress.ip_address(address).version
    except ValueError:
        return 0
