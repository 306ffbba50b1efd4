"""Who is cabled to whom, from what a network already tells: LLDP (`lldpctl -f json` of each
device) or a plain CSV of `device,port,peer,peer_port` rows.

Pure: text in, `Cable`s out (one per local port that sees a neighbour). lldpd prints an object
where it has one interface (or one chassis) and a list where it has several; both read alike.
A neighbour's port is its LLDP port id when that is an interface name (Cumulus, SONiC, twin's
own nodes send it so), else its port description; a neighbour's name is its chassis name.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from twin.errors import Problem

CSV_FIELDS = ("device", "port", "peer", "peer_port")


@dataclass(frozen=True)
class Cable:
    device: str
    port: str
    peer: str
    peer_port: str
    source: str          # the file (and row) that says so

    def ends(self) -> frozenset[tuple[str, str]]:
        return frozenset({(self.device, self.port), (self.peer, self.peer_port)})


def _items(value) -> list:
    """lldpd's JSON: a list of one-key objects, or one object with a key per item -> [(key, value)]."""
    if isinstance(value, list):
        return [kv for v in value if isinstance(v, dict) for kv in v.items()]
    return list(value.items()) if isinstance(value, dict) else []


def from_lldp(device: str, text: str, source: str) -> tuple[list[Cable], list[Problem]]:
    """The cables `lldpctl -f json` of `device` shows."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        return [], [Problem(source, "", f"not the JSON of `lldpctl -f json` ({e.msg}, line {e.lineno})")]
    lldp = doc.get("lldp") if isinstance(doc, dict) else None
    if not isinstance(lldp, dict):
        return [], [Problem(source, "", "not the JSON of `lldpctl -f json`: no \"lldp\" object")]
    cables, problems = [], []
    for port, entry in _items(lldp.get("interface")):
        if not isinstance(entry, dict):
            continue
        chassis = _items(entry.get("chassis"))
        name = next((k for k, v in chassis if isinstance(v, dict) and k != "id"), None)
        if name is None and chassis:
            name = next((v.get("value") for k, v in chassis if k == "name" and isinstance(v, dict)), None)
        peer_port = _port(entry.get("port") or {})
        if not name or not peer_port:
            problems.append(Problem(source, f"interface {port}", "a neighbour without a system name or port name: "
                                                                "its cable cannot be placed"))
            continue
        cables.append(Cable(device, port, name, peer_port, f"{source} ({port})"))
    return cables, problems


def _port(port: dict) -> str | None:
    pid = port.get("id") if isinstance(port, dict) else None
    if isinstance(pid, dict) and pid.get("type") == "ifname" and pid.get("value"):
        return str(pid["value"])
    descr = port.get("descr") if isinstance(port, dict) else None
    return str(descr) if descr and " " not in str(descr) else (str(pid.get("value")) if isinstance(pid, dict)
                                                                and pid.get("type") == "local" else None)


def from_csv(text: str, source: str) -> tuple[list[Cable], list[Problem]]:
    """Rows of `device,port,peer,peer_port` (a header row of those names is skipped)."""
    cables, problems = [], []
    for i, row in enumerate(csv.reader(io.StringIO(text)), 1):
        cells = [c.strip() for c in row]
        if not any(cells) or cells[0].startswith("#") or tuple(c.lower() for c in cells) == CSV_FIELDS:
            continue
        if len(cells) != 4 or not all(cells):
            problems.append(Problem(source, "", f"expected {','.join(CSV_FIELDS)}; got {','.join(cells)!r}", i))
            continue
        cables.append(Cable(*cells, source=f"{source}:{i}"))
    return cables, problems


def links(cables: list[Cable]) -> tuple[list[tuple[tuple[str, str], tuple[str, str]]], list[Problem]]:
    """One link per cable seen from either end or both; a port cabled to two places is a problem."""
    by_port: dict[tuple[str, str], Cable] = {}
    out, problems = [], []
    for c in cables:
        a, b = (c.device, c.port), (c.peer, c.peer_port)
        known = by_port.get(a) or by_port.get(b)
        if known is not None and known.ends() == c.ends():
            continue   # the other end's view of a cable already placed
        clash = [by_port[e] for e in (a, b) if e in by_port]
        if clash:
            other = clash[0]
            problems.append(Problem(c.source, "", f"{a[0]}:{a[1]} -- {b[0]}:{b[1]} contradicts {other.source}, "
                                                  f"which says {other.device}:{other.port} -- {other.peer}:"
                                                  f"{other.peer_port}"))
            continue
        by_port[a] = by_port[b] = c
        out.append((a, b))
    return out, problems
