"""What a node's lldpd runs and sees (every twin node of the node image runs one, as a switch does),
read with `lldpcli -f json0` in one exec: its configuration (timers, the system name it sends) and its
neighbours per port (system name, chassis id, port id, TTL, age). json0 is lldpd's JSON where every
value is a list (its `json` gives an object where it has one item and a list where it has several);
output that is not lldpd's JSON is an error, never an empty answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from twin.base.errors import CommandError
from twin.runtime.exec import NodeExec

READ = "lldpcli -f json0 show configuration && lldpcli -f json0 show chassis && lldpcli -f json0 show neighbors"


@dataclass(frozen=True)
class Neighbor:
    """One neighbour a port of the node sees, as lldpd reports it."""

    name: str  # its system name ("" when it sends none)
    port: str  # its port id (an interface name where it sends one, as twin's nodes and Cumulus do)
    port_type: str  # ifname, mac, local...
    ttl: int | None  # how long the node holds it, in seconds
    chassis_id: str = ""
    port_descr: str = ""
    descr: str = ""  # its system description
    mgmt: tuple[str, ...] = ()  # its management addresses
    via: str = "LLDP"
    age: str = ""


@dataclass(frozen=True)
class Lldpd:
    """A node's lldpd: its timers, the system name it sends, and per port what it sees."""

    tx_interval: int
    tx_hold: int
    system_name: str
    neighbors: dict[str, list[Neighbor]] = field(default_factory=dict)


def read(ex: NodeExec) -> Lldpd:
    """The node's lldpd, read at once (CommandError: lldpd does not answer, or not in its JSON)."""
    res = ex.check(["sh", "-ec", READ])
    docs: list[Any] = []
    decoder, text, pos = json.JSONDecoder(), res.stdout, 0
    try:
        while len(docs) < 3:
            while pos < len(text) and text[pos].isspace():
                pos += 1
            doc, pos = decoder.raw_decode(text, pos)
            docs.append(doc)
        return parse(*docs)
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise CommandError(ex.where, res.cmd, res.rc, f"not lldpd's JSON ({e}):\n{text[:2000]}", res.stderr) from None


def _value(items: Any, key: str = "value") -> str:
    """The first value of lldpd's list of {value: ...} ("" when it has none)."""
    return str(items[0].get(key, "")) if isinstance(items, list) and items and isinstance(items[0], dict) else ""


def parse(config: dict, chassis: dict, neighbors: dict) -> Lldpd:
    """lldpd's configuration, local chassis and neighbours (json0) as `Lldpd` (KeyError, IndexError:
    not that JSON)."""
    c = config["configuration"][0]["config"][0]
    local = chassis["local-chassis"][0]["chassis"][0]
    out: dict[str, list[Neighbor]] = {}
    for lldp in neighbors.get("lldp", []):
        for i in lldp.get("interface", []):
            out.setdefault(str(i["name"]), []).append(neighbor(i))
    return Lldpd(int(_value(c["tx-delay"])), int(_value(c["tx-hold"])), _value(local.get("name")), out)


def neighbor(i: dict) -> Neighbor:
    ch = (i.get("chassis") or [{}])[0]
    port = (i.get("port") or [{}])[0]
    ttl = _value(port.get("ttl")) or _value(i.get("ttl"), "ttl")
    return Neighbor(
        name=_value(ch.get("name")),
        port=_value(port.get("id")),
        port_type=_value(port.get("id"), "type"),
        ttl=int(ttl) if ttl.isdigit() else None,
        chassis_id=_value(ch.get("id")),
        port_descr=_value(port.get("descr")),
        descr=_value(ch.get("descr")),
        mgmt=tuple(str(m.get("value")) for m in ch.get("mgmt-ip") or [] if isinstance(m, dict)),
        via=str(i.get("via", "")),
        age=str(i.get("age", "")),
    )
