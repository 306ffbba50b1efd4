"""Who is cabled to whom, from what a network already tells: LLDP (`lldpctl -f json` of each
device) or a plain CSV of `device,port,peer,peer_port` rows.

Pure: text in, `Cable`s out (one per local port that sees a neighbour). lldpd prints an object
where it has one interface (or one chassis) and a list where it has several; both read alike.
A neighbour's port is its LLDP port id when that is an interface name (Cumulus, SONiC, twin's
own nodes send it so), else its port description; a neighbour's name is its chassis name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from twin.base.errors import Problem
from twin.topology import csv_safe, files, json_safe
from twin.topology.problems import Path_, Problems, dotted, listing, quoted

CSV_FIELDS = ("device", "port", "peer", "peer_port")


@dataclass(frozen=True)
class Cable:
    device: str
    port: str
    peer: str
    peer_port: str
    source: str  # the file (and row) that says so

    def ends(self) -> frozenset[tuple[str, str]]:
        return frozenset({(self.device, self.port), (self.peer, self.peer_port)})


def _items(value: object) -> list[tuple[str, Any]]:
    """lldpd's JSON: a list of one-key objects, or one object with a key per item -> [(key, value)]."""
    if isinstance(value, list):
        return [kv for v in value if isinstance(v, dict) for kv in v.items()]
    return list(value.items()) if isinstance(value, dict) else []


def from_lldp(device: str, text: str, source: str) -> tuple[list[Cable], list[Problem]]:
    """The cables `lldpctl -f json` of `device` shows."""
    try:
        doc, lines, found = json_safe.parse(text, files.LLDP_JSON)
    except files.Refused as e:
        return [], [e.problem(source)]
    if found:
        return [], [Problem(source, dotted(place), message, line) for message, line, place in found]
    lldp = doc.get("lldp") if isinstance(doc, dict) else None
    if not isinstance(lldp, dict):
        return [], [Problem(source, "", 'not the JSON of `lldpctl -f json`: no "lldp" object', lines.get(()))]
    cables, problems = [], Problems(source, lines)
    for i, (port, entry) in enumerate(_items(lldp.get("interface"))):
        if not isinstance(entry, dict):
            continue
        chassis = _items(entry.get("chassis"))
        name = next((k for k, v in chassis if isinstance(v, dict) and k != "id"), None)
        if name is None and chassis:
            name = next((v.get("value") for k, v in chassis if k == "name" and isinstance(v, dict)), None)
        peer_port = _port(entry.get("port") or {})
        if not isinstance(name, str) or not name or not peer_port:
            where = _where(lldp.get("interface"), i, port)
            problems.add(
                where,
                f"interface {listing([port])}: a neighbour without a system name or port name: "
                "its cable cannot be placed",
            )
            continue
        cables.append(Cable(device, port, name, peer_port, f"{source} ({listing([port])})"))
    return cables, problems.items


def _where(interfaces: object, i: int, port: str) -> Path_:
    """The place of the i-th interface in lldpd's JSON (a list of one-key objects, or one object)."""
    return ("lldp", "interface", i, port) if isinstance(interfaces, list) else ("lldp", "interface", port)


def _port(port: dict) -> str | None:
    pid = port.get("id") if isinstance(port, dict) else None
    if isinstance(pid, dict) and pid.get("type") == "ifname" and pid.get("value"):
        return str(pid["value"])
    descr = port.get("descr") if isinstance(port, dict) else None
    return (
        str(descr)
        if descr and " " not in str(descr)
        else (str(pid.get("value")) if isinstance(pid, dict) and pid.get("type") == "local" else None)
    )


def from_csv(text: str, source: str) -> tuple[list[Cable], list[Problem]]:
    """Rows of `device,port,peer,peer_port` (a header row of those names is skipped)."""
    cables = []
    rows, problems = csv_safe.rows(text, source, files.CABLES_CSV)
    for line, row in rows:
        cells = [c.strip() for c in row]
        if not any(cells) or cells[0].startswith("#") or tuple(c.lower() for c in cells) == CSV_FIELDS:
            continue
        if len(cells) != 4 or not all(cells):
            problems.append(
                Problem(source, "", f"expected {','.join(CSV_FIELDS)}; got {quoted(','.join(cells))}", line)
            )
            continue
        device, port, peer, peer_port = cells
        cables.append(Cable(device, port, peer, peer_port, source=f"{source}:{line}"))
    return cables, problems


def links(cables: list[Cable]) -> tuple[list[tuple[tuple[str, str], tuple[str, str]]], list[Problem]]:
    """One link per cable seen from either end or both; a port cabled to two places is a problem."""
    by_port: dict[tuple[str, str], Cable] = {}
    out, problems = [], []
    for c in cables:
        a, b = (c.device, c.port), (c.peer, c.peer_port)
        known = by_port.get(a) or by_port.get(b)
        if known is not None and known.ends() == c.ends():
            continue  # the other end's view of a cable already placed
        clash = [by_port[e] for e in (a, b) if e in by_port]
        if clash:
            other = clash[0]
            problems.append(
                Problem(
                    c.source,
                    "",
                    f"{_end(a)} -- {_end(b)} contradicts {other.source}, which says "
                    f"{_end((other.device, other.port))} -- "
                    f"{_end((other.peer, other.peer_port))}",
                )
            )
            continue
        by_port[a] = by_port[b] = c
        out.append((a, b))
    return out, problems


def _end(end: tuple[str, str]) -> str:
    return listing([f"{end[0]}:{end[1]}"])
