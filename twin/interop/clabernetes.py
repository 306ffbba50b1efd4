"""Clabernetes export: a twin lab as Kubernetes manifests, for labs larger than one machine.

Owns one multi-document YAML file, `<lab>.clabernetes.yml`, ready for
`kubectl apply -f`: a ConfigMap per node holding the files its containerlab
node binds, then the Clabernetes `Topology` (clabernetes.containerlab.dev/v1alpha1)
whose `spec.definition.containerlab` is the very topology of the containerlab
export and whose `spec.deployment.filesFromConfigMap` mounts each file where
that topology's relative binds expect it (`<node>/<file>`), as Clabernetes'
clabverter does. Clabernetes runs each node in its own launcher pod and turns
links into VXLAN tunnels between pods. A node on the management network publishes its SSH (22)
and NVUE API (8765) ports, which Clabernetes exposes as a ClusterIP service per node (and only
those: `disableAutoExpose`); a lab without one exposes nothing.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Callable

import yaml

from twin.base.errors import TwinError
from twin.config.backend import DEFAULT_BACKEND
from twin.config.overlay import Backend
from twin.interop.containerlab import ClabLab, Files, build_containerlab
from twin.kinds import NVUE_PORT, SSH_PORT
from twin.topology.model import Fabric

API_VERSION = "clabernetes.containerlab.dev/v1alpha1"
CONFIGMAP_MAX = 1024 * 1024  # bytes a ConfigMap may hold (etcd's limit)
_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")  # what a ConfigMap key may be
MGMT_PORTS = (SSH_PORT, NVUE_PORT)


def export_clabernetes(
    fabric: Fabric,
    files: Files,
    out_dir: Path,
    *,
    image: str,
    backend: Backend = DEFAULT_BACKEND,
    namespace: str | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> Path:
    """Write `<out_dir>/<lab>.clabernetes.yml`; returns its path. Arguments as for export_containerlab."""
    docs = build_clabernetes(fabric, files, image=image, backend=backend, namespace=namespace, say=say)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{fabric.name}.clabernetes.yml"
    head = (
        f"# Clabernetes manifests of twin lab {fabric.name}: one ConfigMap per node, then the Topology.\n"
        f"# kubectl apply -f {path.name}\n"
    )
    path.write_text(head + yaml.safe_dump_all(docs, sort_keys=False, default_flow_style=False))
    return path


def build_clabernetes(
    fabric: Fabric,
    files: Files,
    *,
    image: str,
    backend: Backend = DEFAULT_BACKEND,
    namespace: str | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> list[dict]:
    """The manifests (pure): ConfigMaps first, so they exist when the Topology's pods mount them."""
    lab = build_containerlab(fabric, files, image=image, backend=backend)
    managed = [n.name for n in fabric.managed() if n.mgmt]
    for n in managed:  # what a switch serves on its management address, exposed as the cluster's services
        lab.topology["topology"]["nodes"][n]["ports"] = [f"{p}:{p}" for p in MGMT_PORTS]
    for note in lab.notes:
        say(f"{note}; in a pod, that path is the Kubernetes node's")
    configmaps = [configmap(lab, node, namespace) for node in lab.files]
    return configmaps + [topology(lab, namespace, bool(managed))]


def configmap_name(lab: str, node: str) -> str:
    return f"{lab}-{node}-files"


def configmap(lab: ClabLab, node: str, namespace: str | None) -> dict:
    """One node's bound files as a ConfigMap, each file a key: text in `data`, any other bytes
    (a binary file) base64 in `binaryData`."""
    files = lab.files[node]
    bad = [k for k in files if not _KEY.match(k)]
    if bad:
        raise TwinError(f"{node}: file name(s) {', '.join(bad)} cannot be ConfigMap keys ([-._a-zA-Z0-9]+)")
    raw = {k: v if isinstance(v, bytes) else v.encode() for k, v in files.items()}
    size = sum(len(k.encode()) + len(v) for k, v in raw.items())
    if size > CONFIGMAP_MAX:
        raise TwinError(f"{node}: its files ({size} bytes) exceed a ConfigMap's {CONFIGMAP_MAX} bytes")
    text, binary = {}, {}
    for k, v in raw.items():
        try:
            text[k] = v.decode("utf-8")
        except UnicodeDecodeError:
            binary[k] = base64.b64encode(v).decode()
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(configmap_name(lab.name, node), namespace),
        "data": text,
    } | ({"binaryData": binary} if binary else {})


def topology(lab: ClabLab, namespace: str | None, managed: bool = False) -> dict:
    """The Clabernetes Topology holding the containerlab topology and where its files come from; a lab
    with a management network has its nodes' SSH and NVUE API (their `ports`) exposed in the cluster."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Topology",
        "metadata": _meta(lab.name, namespace),
        "spec": {
            "definition": {"containerlab": lab.text()},
            "deployment": {"filesFromConfigMap": {node: mounts(lab, node) for node in lab.files}},
            "expose": {"exposeType": "ClusterIP", "disableAutoExpose": True} if managed else {"disableExpose": True},
        },
    }


def mounts(lab: ClabLab, node: str) -> list[dict]:
    """Every file of `node` at `<node>/<file>`, relative to the launcher's topology, as the binds name it."""
    return [
        {
            "filePath": f"{node}/{name}",
            "configMapName": configmap_name(lab.name, node),
            "configMapPath": name,
            "mode": "execute" if (node, name) in lab.executable else "read",
        }
        for name in lab.files[node]
    ]


def _meta(name: str, namespace: str | None) -> dict:
    return {"name": name, **({"namespace": namespace} if namespace else {})}
