"""A lab made from a request: a topology (with configs as an archive or a map) or a snapshot.

    JSON       {"topology": TEXT, "format": "twin"|"containerlab"|"air", "configs": {node: {file: text}},
                "name", "expires_in", "timeout", "vrf_backend", "roles": {node: kind}}
               or {"snapshot": ID, "name": NEW, ...}
    multipart  parts `topology` (a file) and `configs` (a .tar, .tar.gz or .zip), and the same
               fields as text (`roles`: NODE=KIND,...)

The request is answered once the lab is known good enough to start: its files read and
validated (422 with every problem), its name free (409), the user's quota and the host's
capacity (409 with the numbers); the bring-up is the operation that follows.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from twin.base.errors import TwinError
from twin.interop import parse_roles
from twin.lab import Lab
from twin.lifecycle import state
from twin.server import bodies, labwork, quotas, snapshots
from twin.server.auth import Principal, duration
from twin.server.core import Core
from twin.server.problems import ApiProblem
from twin.topology.model import Confined

Duration = int | str


class CreateBody(BaseModel):
    """A new lab: from `topology` (and `configs`) or from `snapshot`."""

    model_config = ConfigDict(extra="forbid")
    topology: str | None = Field(None, max_length=4 << 20, description="The topology file's text.")
    format: Literal["twin", "containerlab", "air"] = Field("twin", description="What the topology is.")
    configs: dict[str, dict[str, str]] | None = Field(
        None, description="The user's files per node: {node: {frr.conf|daemons|startup.yaml: text}}."
    )
    snapshot: str | None = Field(None, max_length=64, description="A snapshot's id: a lab that runs what it kept.")
    name: str | None = Field(None, max_length=64, description="The lab's name (default: the topology's).")
    expires_in: Duration | None = Field(None, description="Lifetime: seconds, or 30m, 4h, 2d (default: the server's).")
    timeout: float | None = Field(None, gt=0, le=7200, description="Convergence deadline, s (default: from size).")
    vrf_backend: Literal["netns", "device"] | None = None
    roles: dict[str, str] | None = Field(None, description="Kinds of a containerlab or Air file's nodes.")


def seconds(value: Duration | None, field: str = "expires_in") -> float | None:
    if value is None or isinstance(value, int):
        if isinstance(value, int) and value <= 0:
            raise ApiProblem(422, f"{field}: a positive number of seconds, or a duration such as 4h", "invalid")
        return value
    try:
        return duration(value)
    except TwinError as e:
        raise ApiProblem(422, f"{field}: {e}", "invalid") from None


def from_form(form: dict[str, Any]) -> tuple[CreateBody, bytes | None]:
    """A multipart request's fields as a body, and its configs archive's bytes."""
    text = {k: v for k, v in form.items() if isinstance(v, str)}
    files = {k: v for k, v in form.items() if isinstance(v, bytes)}
    unknown = sorted(
        set(form)
        - {"topology", "configs", "format", "snapshot", "name", "expires_in", "timeout", "vrf_backend", "roles"}
    )
    if unknown:
        raise ApiProblem(
            422,
            f"unknown parts {', '.join(unknown)[:200]}; a create takes topology, configs, format, "
            "snapshot, name, expires_in, timeout, vrf_backend, roles",
            "invalid",
        )
    topology = files.get("topology")
    doc: dict[str, Any] = {k: v for k, v in text.items() if k not in ("roles", "timeout", "configs")}
    if topology is not None:
        doc["topology"] = topology.decode("utf-8", errors="surrogateescape")
    if text.get("timeout"):
        doc["timeout"] = text["timeout"]
    if text.get("roles"):
        try:
            doc["roles"] = parse_roles([text["roles"]])
        except TwinError as e:
            raise ApiProblem(422, str(e).splitlines()[-1].strip(), "invalid") from None
    if isinstance(doc.get("expires_in"), str) and doc["expires_in"].isdigit():
        doc["expires_in"] = int(doc["expires_in"])
    return CreateBody.model_validate(doc), files.get("configs")


def prepare(core: Core, who: Principal, body: CreateBody, archive: bytes | None) -> tuple[Lab, Path, Path | None]:
    """The lab to bring up, loaded from what the request brought into a directory of its own
    (removed again when it is refused): (lab, that directory, a snapshot's NVUE saved files)."""
    if (body.topology is None) == (body.snapshot is None):
        raise ApiProblem(422, "give either a topology or a snapshot", "invalid")
    if body.snapshot is not None and archive is not None:
        raise ApiProblem(422, "a lab from a snapshot takes the snapshot's configs; give no configs", "invalid")
    src = core.new_source()
    try:
        saved = None
        if body.snapshot is not None:
            row = core.store.snapshot(body.snapshot)
            if row is None or (row["owner"] != who.user and not who.admin):
                raise ApiProblem(404, f"no snapshot {body.snapshot!r} of yours", "no-such-snapshot")
            topo, configs, saved = snapshots.unpack(core, body.snapshot, src)
            if body.name is None:
                raise ApiProblem(422, "a lab from a snapshot needs a name of its own (`name`)", "invalid")
        elif body.format == "containerlab" and archive is not None:
            # a containerlab file binds files relative to itself: the archive's, unpacked beside it
            topo = bodies.topology_file(bodies.archive(src, archive, "lab"), body.topology or "", body.format)
            configs = None
        else:
            topo = bodies.topology_file(src, body.topology or "", body.format)
            configs = (
                bodies.archive(src, archive)
                if archive is not None
                else (bodies.config_map(src, body.configs) if body.configs is not None else None)
            )
        if body.name is not None:
            state.check_name(body.name)
        lab = Lab.load(
            topo,
            name=body.name,
            configs=configs,
            roles=body.roles,
            confined=Confined(root=str(src), images=core.settings.allow_images),
        )
        return lab, src, saved
    except BaseException:
        shutil.rmtree(src, ignore_errors=True)
        raise


def admit(core: Core, who: Principal, lab: Lab, body: CreateBody) -> tuple[int, int, float]:
    """The quota (409 with the numbers) and the host's capacity (409 with admission's figures),
    before anything is made; (FRR nodes, memory, lifetime)."""
    assert lab.loaded is not None  # (Lab.load: what it loaded from the body)
    frr, memory = quotas.figures(lab.loaded)
    quotas.check(who.user, core.store.labs(who.user), core.limits(who.user), lab.name, frr, memory)
    life = core.expiry(seconds(body.expires_in))
    quotas.capacity(lab.loaded, body.timeout)
    return frr, memory, life


def start(
    core: Core, who: Principal, body: CreateBody, archive: bytes | None, idem: str | None, digest: str
) -> dict[str, Any]:
    """Everything a create request does; the operation's row."""
    lab, src, saved = prepare(core, who, body, archive)
    try:
        frr, memory, life = admit(core, who, lab, body)

        def record() -> None:
            if core.store.lab(lab.name) is not None or state.labdir(lab.name).exists():
                raise core.taken(who, lab.name)
            (core.where("baselines") / f"{lab.name}.json").unlink(missing_ok=True)  # a removed lab's: not this one's
            quotas.check(who.user, core.store.labs(who.user), core.limits(who.user), lab.name, frr, memory)
            core.store.run(
                "INSERT INTO labs(name, owner, created, expires, state, source, frr_nodes, memory, "
                "snapshot) VALUES (?, ?, ?, ?, 'creating', ?, ?, ?, ?)",
                lab.name,
                who.user,
                time.time(),
                time.time() + life,
                str(src),
                frr,
                memory,
                body.snapshot,
            )

        kind = "restore" if body.snapshot else "create"
        op, new = core.ops.start(
            who, lab.name, kind, labwork.create(lab, body.timeout, body.vrf_backend, saved), idem, digest, before=record
        )
    except BaseException:
        shutil.rmtree(src, ignore_errors=True)
        raise
    if not new:
        shutil.rmtree(src, ignore_errors=True)
    return op
