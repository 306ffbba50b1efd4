"""`twin clone`: a twin of a network that exists, from its devices' frr.conf and who is cabled to whom.

The input is a directory of what an operator can pull from production:
    DIR/<device>/frr.conf (and daemons) or DIR/<device>.conf        each device's FRR config
    DIR/<device>/lldp.json or DIR/<device>.lldp.json                its `lldpctl -f json`
    DIR/*.csv                                                        or rows device,port,peer,peer_port
Out comes a twin topology document and the configs, each node booting its own file.

What is inferred, and from what (each said in a note, with its evidence):
- links and their port names: the neighbour data, both ends agreeing;
- kinds: the spines are the BGP devices that share one ASN and are not cabled to each other
  (RFC 7938, as twin builds fabrics); leafs are the BGP peers of a spine, DPUs one tier below;
  a device without `router bgp` is a `router` (its own config judges it); a device seen only
  by its neighbours (no config) is a host;
- ASNs and loopbacks: `router bgp N` and its router-id (else the /32 of `lo`);
- VTEPs: `advertise-all-vni`, and the fabric's VTEP tier is theirs;
- tenants: `vrf X` / `vni N` of the VTEPs, one per L3VNI, their route targets compared.
What cannot be inferred is asked for (`--role DEVICE=KIND`, `--name`), never guessed:
which tier is the spine when no ASN is shared, a device more than two tiers below the
spines, a VRF's segments and hosts (they live in the devices' interface config, not in
frr.conf: the tenant is written without them, and a note says what to add).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from twin.base.errors import Problem, TopologyError
from twin.config.userconf import FRR_CONF, UserConfigs, read_dir
from twin.intent import frrconf
from twin.interop import neighbors
from twin.kinds import KINDS
from twin.topology import files as inputs
from twin.topology.names import check_lab_name, check_node_name
from twin.topology.problems import listing

TIERS = ("spine", "leaf", "dpu")  # by hops below the spines


@dataclass
class Cloned:
    source: str
    doc: dict
    configs: UserConfigs
    notes: list[str] = field(default_factory=list)


def norm(name: str) -> str:
    """A device name as a twin node name: lowercase, '_' and '.' as '-'."""
    return re.sub(r"[_.]", "-", name.strip().lower())


def clone(d: str | Path, roles: dict[str, str] | None = None, name: str | None = None) -> Cloned:
    """TopologyError names every problem and everything that must be given."""
    d = Path(d)
    c = _Clone(d, roles or {})
    unreadable = False
    try:
        raw = read_dir(d)
    except TopologyError as e:  # every problem at once: the neighbour files are read too
        c.problems += e.problems
        raw, unreadable = UserConfigs(str(d)), True
    c.configs(raw)
    c.cables()
    if unreadable or c.unread:  # what would be inferred without a file could only mislead
        raise TopologyError(c.problems)
    doc = c.document(name)
    if c.problems:
        raise TopologyError(c.problems)
    return Cloned(str(d), doc, UserConfigs(str(d), c.files, c.paths), c.notes)


class _Clone:
    def __init__(self, d: Path, roles: dict[str, str]):
        self.d, self.roles = d, {norm(k): v for k, v in roles.items()}
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.files: dict[str, dict[str, str]] = {}
        self.paths: dict[str, dict[str, str]] = {}
        self.parsed: dict[str, frrconf.FrrConfig] = {}
        self.links: list[tuple[tuple[str, str], tuple[str, str]]] = []
        self.unread = 0  # neighbour files that could not be read

    def configs(self, raw: UserConfigs) -> None:
        for dev, files in raw.files.items():
            node = norm(dev)
            if check_node_name(node):
                self.problems.append(
                    Problem(
                        raw.path(dev, next(iter(files))),
                        "",
                        f"device {dev!r}: {check_node_name(node)}; rename its file",
                    )
                )
                continue
            self.files[node], self.paths[node] = dict(files), dict(raw.paths[dev])
            self.parsed[node] = frrconf.parse(files.get(FRR_CONF, ""))
        if not self.files and not self.problems:
            self.problems.append(
                Problem(str(self.d), "", "no device configs: expected <device>/frr.conf or <device>.conf")
            )

    def cables(self) -> None:
        found: list[neighbors.Cable] = []
        self.unread = 0
        for rel, dev in self._neighbour_files():
            f = str(self.d / rel)
            try:
                text = inputs.read_text(rel, inputs.CABLES_CSV if dev is None else inputs.LLDP_JSON, self.d)
            except inputs.Refused as e:
                self.problems.append(e.problem(f))
                self.unread += 1
                continue
            got, problems = neighbors.from_csv(text, f) if dev is None else neighbors.from_lldp(dev, text, f)
            found += got
            self.problems += problems
        known = set(self.files)
        placed = [
            neighbors.Cable(self.node(c.device, known), c.port, self.node(c.peer, known), c.peer_port, c.source)
            for c in found
        ]
        self.links, problems = neighbors.links(placed)
        self.problems += problems
        if not self.links and not self.unread:
            self.problems.append(
                Problem(
                    str(self.d),
                    "",
                    "no neighbour data: expected <device>/lldp.json "
                    "(`lldpctl -f json`) or a CSV of device,port,peer,peer_port",
                )
            )

    def _neighbour_files(self) -> list[tuple[str, str | None]]:
        """(path relative to the directory, device or None for a CSV of every device's cables)."""
        out: list[tuple[str, str | None]] = []
        for name, is_dir in inputs.entries(self.d):
            if is_dir and inputs.exists(f"{name}/lldp.json", self.d):
                out.append((f"{name}/lldp.json", name))
            elif not is_dir and name.endswith(".lldp.json"):
                out.append((name, name[: -len(".lldp.json")]))
            elif not is_dir and Path(name).suffix == ".csv":
                out.append((name, None))
        return out

    @staticmethod
    def node(name: str, known: set[str]) -> str:
        """A device or neighbour name as the node it is: an FQDN's first label where that is a device."""
        n = norm(name)
        first = norm(name.split(".")[0])
        return n if n in known or first not in known else first

    # --- inference -------------------------------------------------------------------------------
    def document(self, name: str | None) -> dict:
        nodes = self.kinds()
        doc: dict = {"name": self.lab_name(name), "description": f"cloned by twin from {self.d}"}
        vteps = [n for n in self.files if (b := self.parsed[n].default_bgp()) and b.advertise_all_vni]
        tiers = sorted({nodes[n]["kind"] for n in vteps if n in nodes})
        if len(tiers) > 1 or (tiers and not KINDS[tiers[0]].can_be_vtep):
            self.problems.append(
                Problem(
                    str(self.d),
                    "",
                    f"the VTEPs (advertise-all-vni: {listing(vteps)}) are of "
                    f"kinds {', '.join(tiers)}: twin's VTEPs are one tier, "
                    "the leafs or the DPUs; give --role",
                )
            )
        elif tiers:
            doc["vtep"] = tiers[0]
            self.notes.append(f"VTEPs (advertise-all-vni): {listing(vteps)}, so the fabric's VTEP tier is {tiers[0]}")
        doc["nodes"] = nodes
        doc["links"] = [[f"{a}:{pa}", f"{b}:{pb}"] for (a, pa), (b, pb) in self.links]
        tenants = self.tenants(vteps)
        if tenants:
            doc["tenants"] = tenants
        self.notes.append(
            "MTUs are twin's defaults (fabric 9000, hosts 8950): neither frr.conf nor the neighbour "
            "data carries them; set `mtu` on links that differ"
        )
        return doc

    def kinds(self) -> dict[str, dict]:
        peers: dict[str, set[str]] = {}
        for (a, _), (b, _) in self.links:
            peers.setdefault(a, set()).add(b)
            peers.setdefault(b, set()).add(a)
        bgp = {n: g for n, c in self.parsed.items() if (g := c.default_bgp())}
        kinds = {n: k for n, k in self.roles.items() if k in KINDS}
        self._unknown_roles(peers)
        spines = {n for n, k in kinds.items() if k == "spine"}
        if spines:
            self.notes.append(f"spines: {listing(sorted(spines))} (--role)")
        else:
            spines = self._spines(bgp, peers)
        kinds.update({n: "spine" for n in spines if n not in kinds})
        self._tiers(bgp, peers, spines, kinds)
        for n in self.parsed:
            if n not in bgp and n not in kinds:
                kinds[n] = "router"
                self.notes.append(f"{n} has no `router bgp`: a router, judged by what its own config declares")
        hosts = sorted(n for n in peers if n not in self.parsed and n not in kinds)
        kinds.update({n: "host" for n in hosts})
        if hosts:
            self.notes.append(f"hosts (seen by their neighbours, no config of their own): {listing(hosts)}")
        order = {k: i for i, k in enumerate(KINDS)}  # spines first, as a fabric is read
        return {n: self._node(n, kinds[n], bgp.get(n)) for n in sorted(kinds, key=lambda n: (order[kinds[n]], n))}

    def _unknown_roles(self, peers: dict[str, set[str]]) -> None:
        for n, k in self.roles.items():
            if k not in KINDS:
                self.problems.append(Problem("--role", n, f"unknown kind {k!r}; kinds: {', '.join(KINDS)}"))
            elif n not in self.parsed and n not in peers:
                self.problems.append(
                    Problem(
                        "--role",
                        n,
                        f"no device {n!r} in {self.d}; devices: {listing(sorted(set(self.parsed) | set(peers)))}",
                    )
                )

    def _spines(self, bgp: dict[str, frrconf.Bgp], peers: dict[str, set[str]]) -> set[str]:
        shared: dict[int, list[str]] = {}
        for n, b in bgp.items():
            shared.setdefault(b.asn, []).append(n)
        tiers = {
            asn: ns for asn, ns in shared.items() if len(ns) > 1 and not any(peers.get(a, set()) & set(ns) for a in ns)
        }
        if len(tiers) == 1:
            ((asn, ns),) = tiers.items()
            self.notes.append(f"spines: {listing(ns)}, the BGP devices sharing AS {asn} (RFC 7938)")
            return set(ns)
        why = (
            "no ASN is shared by devices not cabled to each other"
            if not tiers
            else f"several ASNs are shared so ({'; '.join(f'AS {a}: {listing(ns)}' for a, ns in tiers.items())})"
        )
        self.problems.append(
            Problem(
                str(self.d),
                "",
                f"cannot tell the spines: {why}; name them: --role SPINE=spine (BGP devices: {listing(sorted(bgp))})",
            )
        )
        return set()

    def _tiers(self, bgp: dict, peers: dict[str, set[str]], spines: set[str], kinds: dict[str, str]) -> None:
        """Leafs one hop below the spines, DPUs two; any other BGP device is asked for."""
        if not spines:
            return
        for n in bgp:
            if n in kinds:
                continue
            level = _level(n, spines, peers, bgp)
            if level is None or level >= len(TIERS):
                where = "no BGP path to a spine" if level is None else f"{level} tiers below the spines"
                self.problems.append(
                    Problem(str(self.d), "", f"{n}: {where}; twin has spines, leafs and DPUs: give --role {n}=KIND")
                )
                continue
            kinds[n] = TIERS[level]
        for tier in TIERS[1:]:
            members = [n for n in bgp if kinds.get(n) == tier and n not in self.roles]
            if members:
                self.notes.append(f"{tier}s: {listing(members)} ({TIERS.index(tier)} tier(s) below the spines)")

    def _node(self, n: str, kind: str, b: frrconf.Bgp | None) -> dict:
        spec: dict = {"kind": kind}
        if b is None or not KINDS[kind].runs_bgp:
            return spec
        lo = b.router_id or next(
            (
                a.split("/")[0]
                for (i, _), x in self.parsed[n].interfaces.items()
                if i == "lo"
                for a in x.addresses
                if a.endswith("/32")
            ),
            None,
        )
        spec["asn"] = b.asn
        if lo:
            spec["loopback"] = lo
        else:
            self.problems.append(
                Problem(
                    self.paths[n].get(FRR_CONF, str(self.d)),
                    "",
                    f"{n}: no `bgp router-id` and no /32 on lo: twin needs its loopback; add one to its config",
                )
            )
        return spec

    def tenants(self, vteps: list[str]) -> dict:
        by_vni: dict[int, dict[str, str]] = {}
        for n in vteps:
            for vrf, vni in self.parsed[n].vrfs.items():
                if vni is not None:
                    by_vni.setdefault(vni, {})[n] = vrf
        out = {}
        for vni, where in sorted(by_vni.items()):
            vrf = sorted(set(where.values()))[0]
            spec = {"l3vni": vni, "segments": {}}
            out[vrf] = spec
            self.notes.append(
                f"tenant {vrf}: L3VNI {vni} (vrf {vrf} on {listing(sorted(where))}); its segments, "
                "subnets and hosts are in the devices' interface config, not in frr.conf: add them "
                "(segments, attachments) for its kernel plane and traffic"
            )
            self.notes += self._rts(vrf, where)
        return out

    def _rts(self, vrf: str, where: dict[str, str]) -> list[str]:
        seen = {}
        for n, v in where.items():
            b = next((b for b in self.parsed[n].bgp if b.vrf == v), None)
            seen[n] = "; ".join(f"{k} {', '.join(r)}" for k, r in sorted((b.rts if b else {}).items())) or "auto"
        if len(set(seen.values())) > 1:
            each = "; ".join(f"{n}: {r}" for n, r in seen.items())
            return [f"tenant {vrf}: its VTEPs' route targets differ ({each}); `twin verify` names what does not meet"]
        return []

    def lab_name(self, name: str | None) -> str:
        lab = name or re.sub(r"[^a-z0-9-]+", "-", self.d.resolve().name.lower()).strip("-")[:16].strip("-")
        if check_lab_name(lab):
            self.problems.append(Problem("--name", "", f"{lab!r}: {check_lab_name(lab)}; give --name"))
        return lab


def _level(n: str, spines: set[str], peers: dict[str, set[str]], bgp: dict) -> int | None:
    """Hops from the nearest spine over BGP devices, None when no path."""
    seen, todo, hops = set(spines), set(spines), 0
    while todo:
        if n in todo:
            return hops
        todo = {p for t in todo for p in peers.get(t, ()) if p in bgp and p not in seen}
        seen |= todo
        hops += 1
    return None
