"""Inventories for the user's own automation: Ansible and Nornir, from a lab's fabric.

    files = inventory(Lab.open("aipod"), "ansible", password=pw)   # {"inventory.yml": "..."}
    files = inventory(Lab.open("aipod"), "nornir", password=pw)    # hosts.yaml, groups.yaml, defaults.yaml
    files = inventory(lab, "nvue", api)               # nvue.yml: the NVUE REST API (ansible.netcommon.httpapi)

A node on the lab's management network (a switch, DPU or router: `Node.mgmt`) is reached there, as
on the fabric: Ansible over SSH to its address (port 22, user cumulus and the lab's password, which
sudo takes too), Nornir with its address as `hostname`, port, username and password. Every other
node (a host, a lab without a management network, or all of them with `connection="docker"`) is
reached through its container (`twin-<lab>-<node>`): Ansible with the `community.docker.docker`
connection, Nornir with `hostname` = container name. Groups are the node kinds; FRR nodes (spine,
leaf, dpu) are also in the group `frr`. Node data: the kind, the lab and, where the node has them,
its ASN, loopback and management address. The `nvue` format reaches the NVUE nodes' REST API
instead (`ansible_network_os: nvidia.nvue.httpapi` over `ansible.netcommon.httpapi`, HTTPS without
certificate validation, user and password): on a node's management address at port 8765, as
`nvued` serves it on a switch, else on the lab's NVUE service at 127.0.0.1, each node's own port.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Protocol, TypedDict

import yaml

from twin import kinds
from twin.base.errors import TwinError
from twin.config.naming import container_name
from twin.kinds import NVUE_PORT, SSH_PORT, USER
from twin.topology.model import Fabric, Node

PYTHON = "/usr/bin/python3"  # the node image's interpreter, for Ansible modules
ANSIBLE_CONNECTION = "community.docker.docker"
FRR_GROUP = "frr"  # every node that runs FRR, whatever its kind
NVUE_GROUP = "nvue"  # the nodes whose NVUE REST API the nvue inventory reaches
HTTPAPI = "ansible.netcommon.httpapi"
NVUE_OS = "nvidia.nvue.httpapi"
CONNECTIONS = ("ssh", "docker")  # how Ansible and Nornir reach a node on the management network
# a lab's nodes make their host keys anew at every `twin up`: a known_hosts entry would only be stale
SSH_ARGS = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"


def _platform(node: Node) -> str:
    return "frr" if kinds.get(node.kind).runs_frr else "linux"


def _facts(node: Node) -> dict[str, Any]:
    """What we know of a node, for the inventory: kind, and ASN/loopback where it has them."""
    out: dict[str, Any] = {"kind": node.kind}
    if node.asn is not None:
        out["asn"] = node.asn
    if node.loopback is not None:
        out["loopback"] = node.loopback
    if node.mgmt is not None:
        out["mgmt"] = node.mgmt
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


def _ansible_host(fabric: Fabric, n: Node, password: str | None, connection: str) -> dict[str, Any]:
    """How Ansible reaches node `n`: over SSH on the management network, else through Docker."""
    if connection == "ssh" and n.mgmt and password:
        return {
            "ansible_connection": "ssh",
            "ansible_host": n.mgmt,
            "ansible_port": SSH_PORT,
            "ansible_user": USER,
            "ansible_password": password,
            "ansible_become_password": password,
            "ansible_ssh_common_args": SSH_ARGS,
            "ansible_python_interpreter": PYTHON,
        }
    return {
        "ansible_connection": ANSIBLE_CONNECTION,
        "ansible_host": container_name(fabric.name, n.name),
        "ansible_python_interpreter": PYTHON,
    }


def ansible(fabric: Fabric, password: str | None = None, connection: str = "ssh") -> dict[str, str]:
    """One YAML inventory: a group per kind, and `frr` holding the FRR kinds."""
    children: dict[str, Any] = {}
    for kind, nodes in _by_kind(fabric).items():
        children[kind] = {
            "hosts": {
                n.name: {**_ansible_host(fabric, n, password, connection), "twin_lab": fabric.name, **_facts(n)}
                for n in nodes
            }
        }
    frr_kinds = [k for k in children if kinds.get(k).runs_frr]
    if frr_kinds:
        children[FRR_GROUP] = {"children": {k: {} for k in frr_kinds}}
    doc = {"all": {"children": children}}
    ssh = connection == "ssh" and password and fabric.managed()
    return {
        "inventory.yml": _dump(
            f"Ansible inventory of twin lab {fabric.name} (`twin inventory {fabric.name}`)"
            + (
                "; it holds the lab's password (SSH with a password: Ansible's ssh connection "
                "needs sshpass; --connection docker goes through Docker instead)"
                if ssh
                else ""
            ),
            doc,
        )
    }


def _nornir_host(fabric: Fabric, n: Node, password: str | None, connection: str) -> dict[str, Any]:
    if connection == "ssh" and n.mgmt and password:
        return {"hostname": n.mgmt, "port": SSH_PORT, "username": USER, "password": password}
    return {"hostname": container_name(fabric.name, n.name)}


def nornir(fabric: Fabric, password: str | None = None, connection: str = "ssh") -> dict[str, str]:
    """Nornir SimpleInventory: hosts.yaml, groups.yaml, defaults.yaml."""
    by_kind = _by_kind(fabric)
    hosts = {
        n.name: {
            **_nornir_host(fabric, n, password, connection),
            "platform": _platform(n),
            "groups": [n.kind] + ([FRR_GROUP] if kinds.get(n.kind).runs_frr else []),
            "data": {**_facts(n), "lab": fabric.name},
        }
        for nodes in by_kind.values()
        for n in nodes
    }
    groups: dict[str, Any] = {
        kind: {"platform": _platform(nodes[0]), "data": {"kind": kind}} for kind, nodes in by_kind.items()
    }
    if any(kinds.get(k).runs_frr for k in by_kind):
        groups[FRR_GROUP] = {"platform": "frr", "data": {}}
    defaults = {"data": {"lab": fabric.name}}
    head = f"Nornir SimpleInventory of twin lab {fabric.name} (`twin inventory {fabric.name} --format nornir`)"
    return {
        "hosts.yaml": _dump(head, hosts),
        "groups.yaml": _dump(head, groups),
        "defaults.yaml": _dump(head, defaults),
    }


class NvueApi(TypedDict):
    """Where one NVUE node's REST API listens on this host (its NVUE service's port), and as whom."""

    port: int
    user: str
    password: str


def nvue(fabric: Fabric, api: dict[str, NvueApi]) -> dict[str, str]:
    """The NVUE nodes with what `ansible.netcommon.httpapi` and `nvidia.nvue` need to reach their
    NVUE REST API (`api`: node -> {port, user, password}): a group `nvue`, hosts by node name."""
    at = {
        n: (x.mgmt, NVUE_PORT) if x.mgmt else ("127.0.0.1", api[n]["port"]) for n, x in fabric.nodes.items() if n in api
    }
    hosts = {
        n: {
            "ansible_connection": HTTPAPI,
            "ansible_network_os": NVUE_OS,
            "ansible_host": at[n][0],
            "ansible_httpapi_port": at[n][1],
            "ansible_user": a["user"],
            "ansible_password": a["password"],
            "ansible_httpapi_use_ssl": True,
            "ansible_httpapi_validate_certs": False,
            "twin_lab": fabric.name,
            **_facts(fabric.nodes[n]),
        }
        for n, a in sorted(api.items())
        if n in fabric.nodes
    }
    doc = {"all": {"children": {NVUE_GROUP: {"hosts": hosts}}}}
    head = (
        f"NVUE REST API inventory of twin lab {fabric.name} (`twin inventory {fabric.name} --format nvue`): "
        "it holds the lab's password"
    )
    return {"nvue.yml": _dump(head, doc)}


FORMATS: dict[str, Callable[..., dict[str, str]]] = {"ansible": ansible, "nornir": nornir, "nvue": nvue}


class HasFabric(Protocol):
    """A Lab or its context: a name and the fabric it runs (None: not loaded)."""

    @property
    def name(self) -> str: ...

    @property
    def fabric(self) -> Fabric | None: ...


def inventory(
    lab: HasFabric | Fabric,
    fmt: str,
    api: dict[str, NvueApi] | None = None,
    password: str | None = None,
    connection: str = "ssh",
) -> dict[str, str]:
    """The inventory files of `lab` (a Lab, its context, or a Fabric) in format `fmt`
    (ansible, nornir: nodes on the management network over SSH with `password`, unless `connection`
    is "docker"; nvue with `api`, its NVUE nodes' REST API): file name -> content."""
    try:
        make = FORMATS[fmt]
    except KeyError:
        raise TwinError(f"unknown inventory format {fmt!r}; formats: {', '.join(FORMATS)}") from None
    if connection not in CONNECTIONS:
        raise TwinError(f"unknown connection {connection!r}; connections: {', '.join(CONNECTIONS)}")
    fabric = lab if isinstance(lab, Fabric) else lab.fabric
    if fabric is None:
        raise TwinError(f"lab {lab.name!r} has no topology: load it (Lab.load) or bring it up first")
    if fmt == "nvue":
        if not api:
            raise TwinError(
                f"lab {fabric.name!r} has no NVUE REST API: none of its nodes runs NVUE "
                "(`twin up --configs` with startup.yaml files), or its NVUE service is not running"
            )
        return make(fabric, api)
    return make(fabric, password, connection)


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
