"""Inventories for the user's own automation: Ansible and Nornir, from a lab's fabric.

    files = inventory(Lab.open("aipod"), "ansible")   # {"inventory.yml": "..."}
    files = inventory(Lab.open("aipod"), "nornir")    # hosts.yaml, groups.yaml, defaults.yaml
    files = inventory(lab, "nvue", api)               # nvue.yml: the NVUE REST API (ansible.netcommon.httpapi)

Every node is reached through its container (`twin-<lab>-<node>`): Ansible with
the `community.docker.docker` connection, Nornir with `hostname` = container
name. Groups are the node kinds; FRR nodes (spine, leaf, dpu) are also in the
group `frr`. Node data: the kind, the lab and, where the node has them, its ASN
and loopback. The `nvue` format reaches the NVUE nodes' REST API instead (the lab's NVUE
service: `ansible_network_os: nvidia.nvue.httpapi` over `ansible.netcommon.httpapi`, HTTPS on
127.0.0.1 without certificate validation, user and password), for the `nvidia.nvue`
collection and `ansible.builtin.uri`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import yaml

from twin import kinds
from twin.config.naming import container_name
from twin.errors import TwinError
from twin.topology.model import Fabric, Node

PYTHON = "/usr/bin/python3"          # the node image's interpreter, for Ansible modules
ANSIBLE_CONNECTION = "community.docker.docker"
FRR_GROUP = "frr"                    # every node that runs FRR, whatever its kind
NVUE_GROUP = "nvue"                  # the nodes whose NVUE REST API the nvue inventory reaches
HTTPAPI = "ansible.netcommon.httpapi"
NVUE_OS = "nvidia.nvue.httpapi"


def _platform(node: Node) -> str:
    return "frr" if kinds.get(node.kind).runs_frr else "linux"


def _facts(node: Node) -> dict[str, Any]:
    """What we know of a node, for the inventory: kind, and ASN/loopback where it has them."""
    out: dict[str, Any] = {"kind": node.kind}
    if node.asn is not None:
        out["asn"] = node.asn
    if node.loopback is not None:
        out["loopback"] = node.loopback
    return out


def _by_kind(fabric: Fabric) -> dict[str, list[Node]]:
    """Nodes grouped by kind, kinds in registry order (spine, leaf, dpu, host)."""
    order = {k: i for i, k in enumerate(kinds.KINDS)}
    groups: dict[str, list[Node]] = {}
    for node in sorted(fabric.nodes.values(), key=lambda n: (order.get(n.kind, len(order)), n.name)):
        groups.setdefault(node.kind, []).append(node)
    return groups


def _dump(header: str, doc: Any) -> str:
    return f"# {header}\n" + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def ansible(fabric: Fabric) -> dict[str, str]:
    """One YAML inventory: a group per kind, and `frr` holding the FRR kinds."""
    children: dict[str, Any] = {}
    for kind, nodes in _by_kind(fabric).items():
        children[kind] = {"hosts": {
            n.name: {
                "ansible_connection": ANSIBLE_CONNECTION,
                "ansible_host": container_name(fabric.name, n.name),
                "ansible_python_interpreter": PYTHON,
                "twin_lab": fabric.name,
                **_facts(n),
            }
            for n in nodes
        }}
    frr_kinds = [k for k in children if kinds.get(k).runs_frr]
    if frr_kinds:
        children[FRR_GROUP] = {"children": {k: {} for k in frr_kinds}}
    doc = {"all": {"children": children}}
    return {"inventory.yml": _dump(f"Ansible inventory of twin lab {fabric.name} "
                                   f"(`twin inventory {fabric.name}`)", doc)}


def nornir(fabric: Fabric) -> dict[str, str]:
    """Nornir SimpleInventory: hosts.yaml, groups.yaml, defaults.yaml."""
    by_kind = _by_kind(fabric)
    hosts = {
        n.name: {
            "hostname": container_name(fabric.name, n.name),
            "platform": _platform(n),
            "groups": [n.kind] + ([FRR_GROUP] if kinds.get(n.kind).runs_frr else []),
            "data": {**_facts(n), "lab": fabric.name},
        }
        for nodes in by_kind.values()
        for n in nodes
    }
    groups: dict[str, Any] = {kind: {"platform": _platform(nodes[0]), "data": {"kind": kind}}
                              for kind, nodes in by_kind.items()}
    if any(kinds.get(k).runs_frr for k in by_kind):
        groups[FRR_GROUP] = {"platform": "frr", "data": {}}
    defaults = {"data": {"lab": fabric.name}}
    head = f"Nornir SimpleInventory of twin lab {fabric.name} (`twin inventory {fabric.name} --format nornir`)"
    return {"hosts.yaml": _dump(head, hosts),
            "groups.yaml": _dump(head, groups),
            "defaults.yaml": _dump(head, defaults)}


def nvue(fabric: Fabric, api: dict[str, dict]) -> dict[str, str]:
    """The NVUE nodes with what `ansible.netcommon.httpapi` and `nvidia.nvue` need to reach their
    NVUE REST API (`api`: node -> {port, user, password}): a group `nvue`, hosts by node name."""
    hosts = {n: {"ansible_connection": HTTPAPI, "ansible_network_os": NVUE_OS, "ansible_host": "127.0.0.1",
                 "ansible_httpapi_port": a["port"], "ansible_user": a["user"], "ansible_password": a["password"],
                 "ansible_httpapi_use_ssl": True, "ansible_httpapi_validate_certs": False,
                 "twin_lab": fabric.name, **_facts(fabric.nodes[n])}
             for n, a in sorted(api.items()) if n in fabric.nodes}
    doc = {"all": {"children": {NVUE_GROUP: {"hosts": hosts}}}}
    head = (f"NVUE REST API inventory of twin lab {fabric.name} (`twin inventory {fabric.name} --format nvue`): "
            "it holds the lab's password")
    return {"nvue.yml": _dump(head, doc)}


FORMATS: dict[str, Callable[..., dict[str, str]]] = {"ansible": ansible, "nornir": nornir, "nvue": nvue}


def inventory(lab, fmt: str, api: dict[str, dict] | None = None) -> dict[str, str]:
    """The inventory files of `lab` (a Lab, its context, or a Fabric) in format `fmt`
    (ansible, nornir; nvue with `api`, its NVUE nodes' REST API): file name -> content."""
    try:
        make = FORMATS[fmt]
    except KeyError:
        raise TwinError(f"unknown inventory format {fmt!r}; formats: {', '.join(FORMATS)}") from None
    fabric = lab if isinstance(lab, Fabric) else lab.fabric
    if fabric is None:
        raise TwinError(f"lab {lab.name!r} has no topology: load it (Lab.load) or bring it up first")
    if fmt == "nvue":
        if not api:
            raise TwinError(f"lab {fabric.name!r} has no NVUE REST API: none of its nodes runs NVUE "
                            "(`twin up --configs` with startup.yaml files), or its NVUE service is not running")
        return make(fabric, api)
    return make(fabric)


def write(files: dict[str, str], directory: str | Path) -> list[Path]:
    """The files in `directory`, for their owner only (an nvue inventory holds a password)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        f = out / name
        fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(f, 0o600)
        written.append(f)
    return written
