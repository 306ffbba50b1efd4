"""Taking labs out and bringing topologies in: `twin export`, `twin import`, `twin clone`."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from twin import host, nvue, topology
from twin.cli.common import err, main, out, run
from twin.config import userconf
from twin.config.backend import CHOICES, DEFAULT_BACKEND, DEVICE, Backend, wanted
from twin.config.render import render_lab
from twin.config.userconf import UserConfigs
from twin.interop import export_air_dot, export_air_json, export_clabernetes, export_containerlab, parse_roles
from twin.interop.clone import clone
from twin.interop.doors import import_file
from twin.lab import Lab
from twin.lifecycle import state
from twin.topology import Fabric

FORMATS = ("containerlab", "clabernetes", "air-json", "air-dot", "nvue")


def _source(source: str, roles: dict[str, str]) -> tuple[Fabric, Backend, UserConfigs | None]:
    """(fabric, VRF backend, the user's files) of a topology file (a containerlab file: the FRR files
    its nodes bind), or of a lab by name (its recorded intent, and the user's files it runs now)."""
    p = Path(source)
    if p.is_file():
        lab = Lab.load(p, roles=roles)  # its management network at its default, as nothing here takes
        return topology.mgmt.resolve(lab.to_bring_up()), wanted(lab.to_bring_up())[0], lab.configs
    d = state.labdir(source)
    st, fabric = state.load(d)
    if fabric is None:
        raise click.UsageError(f"{source!r} is neither a topology file nor a lab here (`twin list` shows the labs)")
    mine = {n: state.read_files(d, n, names) for n, names in (st.user_files if st else {}).items()}
    return fabric, (st.backend if st else None) or DEFAULT_BACKEND, UserConfigs(str(d), mine) if mine else None


@main.command(name="export")
@click.argument("source", metavar="TOPOLOGY|LAB")
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True, help="What to write.")
@click.option("-o", "--output", type=click.Path(file_okay=False), required=True, help="Directory to write into.")
@click.option("--image", help="Node image in the export (default: twin's node image tag).")
@click.option(
    "--backend",
    type=click.Choice([*CHOICES, "vrf"]),
    help="VRF backend of the VTEPs: netns or device (`vrf` is device's old name); default: the lab's, or "
    "the file's defaults.vrf_backend (netns unless it says device).",
)
@click.option("--namespace", help="Kubernetes namespace of the Clabernetes manifests.")
@click.option(
    "--role",
    "roles",
    multiple=True,
    metavar="NODE=KIND[,...]",
    help="A containerlab file's nodes of kinds twin cannot run, as twin kinds (as `twin up` takes them).",
)
@click.pass_context
def export_(
    cli: click.Context,
    source: str,
    fmt: str,
    output: str,
    image: str | None,
    backend: str | None,
    namespace: str | None,
    roles: tuple[str, ...],
) -> None:
    """Write TOPOLOGY (a file) or LAB (a lab here) in another tool's format: containerlab (a
    .clab.yml with the files it binds), clabernetes (Kubernetes manifests), air-json or air-dot
    (NVIDIA Air topologies), nvue (each spine's, leaf's and DPU's startup.yaml, Cumulus Linux 5.9
    / DOCA HBN: DIR/<node>/startup.yaml). The FRR files of the containerlab and Clabernetes exports
    are the ones the lab runs: twin's rendering, and your own where you gave them (--configs, a
    containerlab file's binds). See docs/interop.md for what each carries."""

    def export_lab() -> None:
        fabric, recorded, configs = _source(source, parse_roles(roles))
        d = Path(output)
        path: str | Path  # what it wrote
        if fmt == "nvue":
            texts, notes = nvue.export(fabric)
            state.write_files(d, {n: {nvue.STARTUP: t} for n, t in texts.items()})
            for note in notes:
                err.print(f"note: {note}")
            path = f"{d}: {len(texts)} startup.yaml ({', '.join(texts)}); `twin up {source} --configs {d}` runs them"
        elif fmt in ("air-json", "air-dot"):
            d.mkdir(parents=True, exist_ok=True)
            path = air = d / f"{fabric.name}.{'json' if fmt == 'air-json' else 'dot'}"
            air.write_text(export_air_json(fabric) if fmt == "air-json" else export_air_dot(fabric))
        else:
            b = recorded if backend is None else CHOICES.get(backend, DEVICE)  # vrf: the device backend's own word
            tag = image or host.node_tag()
            write = export_containerlab if fmt == "containerlab" else export_clabernetes
            extra = {"namespace": namespace} if fmt == "clabernetes" else {}
            files = userconf.merge(render_lab(fabric, b), configs, fabric, b)[0]
            path = write(fabric, files, d, image=tag, backend=b, say=lambda m: err.print(f"note: {m}"), **extra)
        out.print(f"wrote {path}")

    run(cli, export_lab)


@main.command(name="clone")
@click.argument("source", metavar="DIR", type=click.Path(file_okay=False, exists=True))
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False),
    required=True,
    metavar="OUT",
    help="Directory to write the topology and configs into.",
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    metavar="DEVICE=KIND[,...]",
    help="The kind of a device that cannot be inferred (e.g. the spine of a one-spine fabric); "
    "repeatable, e.g. --role spine1=spine.",
)
@click.option("--name", help="Lab name (default: DIR's name).")
@click.pass_context
def clone_(cli: click.Context, source: str, output: str, roles: tuple[str, ...], name: str | None) -> None:
    """A twin of a network that exists, from its devices' FRR configs and who is cabled to whom.

    \b
    DIR holds, per device:
      DIR/<device>/frr.conf (and daemons), or DIR/<device>.conf
      DIR/<device>/lldp.json or DIR/<device>.lldp.json: its `lldpctl -f json`
      or, for the whole network, DIR/*.csv: rows of device,port,peer,peer_port
    Writes OUT/topology.yml (nodes, links with their port names, kinds: spines from the ASN
    they share, leafs and DPUs by tier below them, VTEPs from advertise-all-vni, tenants from
    `vrf ... vni` and their route targets; ASNs and loopbacks from `router bgp`) and
    OUT/configs/. What it cannot infer it asks for (--role, --name), and it says what it
    inferred from what. Then: twin up OUT/topology.yml --configs OUT/configs."""

    def clone_lab() -> None:
        if name is not None:
            state.check_name(name)
        cloned = clone(source, roles=parse_roles(roles), name=name)
        topology.load_document(cloned.doc, source)  # every problem, before anything is written
        d = Path(output)
        d.mkdir(parents=True, exist_ok=True)
        path, configs = d / "topology.yml", d / "configs"
        head = f"# cloned by twin from {source}\n" + "".join(f"# note: {n}\n" for n in cloned.notes)
        path.write_text(head + yaml.safe_dump(cloned.doc, sort_keys=False))
        state.write_files(configs, cloned.configs.files)
        fabric = topology.load(path)
        for note in cloned.notes:
            err.print(f"note: {note}")
        out.print(
            f"wrote {path}: {len(fabric.nodes)} nodes, {len(fabric.links)} links, {len(fabric.tenants)} tenants; "
            f"and {configs}; `twin up {path} --configs {configs}` runs it"
        )

    run(cli, clone_lab)


@main.command(name="import")
@click.argument("file", type=click.Path(dir_okay=False, exists=True))
@click.option(
    "-o", "--output", type=click.Path(file_okay=False), required=True, metavar="DIR", help="Directory to write into."
)
@click.option(
    "--role",
    "roles",
    multiple=True,
    metavar="NODE=KIND[,...]",
    help="The twin kind of nodes the file does not place, or of kinds twin cannot run (SR Linux, cEOS...; "
    "twin then renders their day-0 config); repeatable, e.g. --role leaf1=leaf,spine=spine.",
)
@click.option("--name", help="Lab name (default: from the file).")
@click.pass_context
def import_(cli: click.Context, file: str, output: str, roles: tuple[str, ...], name: str | None) -> None:
    """Turn FILE into a twin topology, DIR/<lab>.yml, checked as `twin up` would check it.

    \b
    FILE is one of:
      LAB.clab.yml   a containerlab topology: defaults/kinds/groups inherited as containerlab
                     does, binds of frr.conf/daemons (relative to the file) written to
                     DIR/configs/<node>/, exec commands of linux nodes, interface names as
                     given; `kind: linux` nodes with FRR's files are routers, the others
                     hosts; images and the management network are left out (said so)
      *.json, *.dot  an NVIDIA Air topology
    Then: twin up DIR/<lab>.yml [--configs DIR/configs]. A .clab.yml also runs directly:
    twin up LAB.clab.yml."""

    def import_topology() -> None:
        if name is not None:
            state.check_name(name)
        d = Path(output)
        imported = import_file(file, roles=parse_roles(roles), name=name)
        doc, notes = imported.doc, imported.notes
        topology.load_document(doc, str(file), lines=imported.lines)  # every problem, before anything is written
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{doc['name']}.yml"
        head = f"# imported by twin from {file}\n" + "".join(f"# note: {n}\n" for n in notes)
        path.write_text(head + yaml.safe_dump(doc, sort_keys=False))
        fabric = topology.load(path)
        for note in notes:
            err.print(f"note: {note}")
        run_it = f"twin up {path}"
        if imported.configs.files:
            configs = d / "configs"
            state.write_files(configs, imported.configs.files)
            run_it += f" --configs {configs}"
            out.print(f"wrote {configs}: the FRR files of {', '.join(imported.configs.files)}")
        out.print(f"wrote {path}: {len(fabric.nodes)} nodes, {len(fabric.links)} links; `{run_it}` runs it")

    run(cli, import_topology)
