"""A change a request brings (for plan, apply and rehearse), as the spec `twin.change.load_change`
takes on the command line: an edited topology, a directory of node configs (FRR or NVUE), an
`nv` file for a node, or a fault.

    JSON       {"topology": TEXT, "format": ...} | {"configs": {node: {file: text}}}
               | {"nv": {"node": NODE, "commands": TEXT}} | {"fault": {"fault": KEY, "target": T, "args": [...]}}
    multipart  `topology` (a file), `configs` (an archive), or `nv` (a file) with `node`

What it brings is written under the lab's own directory of the server (`changes/<id>/`) and read
from there by twin's reader, with its limits.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from twin.change import fault_types
from twin.server import bodies
from twin.server.problems import ApiProblem

_TARGET = re.compile(r"[A-Za-z0-9_.-]{1,64}(:[A-Za-z0-9_./-]{1,64})?")
_ARG = re.compile(r"[A-Za-z0-9_.%-]{1,32}")


class NvBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    node: str = Field(..., max_length=64)
    commands: str = Field(..., max_length=1 << 20, description="nv commands, one a line (an nv file).")


class FaultBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fault: str = Field(..., max_length=32, description="A fault's key, as `twin fault KEY`.")
    target: str = Field(..., max_length=130, description="NODE or NODE:PORT.")
    args: list[str] = Field(default_factory=list, max_length=4)


class ChangeBody(BaseModel):
    """One change: a topology, configs, an nv file or a fault."""

    model_config = ConfigDict(extra="forbid")
    topology: str | None = Field(None, max_length=4 << 20)
    format: Literal["twin", "containerlab", "air"] = "twin"
    configs: dict[str, dict[str, str]] | None = None
    nv: NvBody | None = None
    fault: FaultBody | None = None


def fault_spec(f: FaultBody) -> str:
    known = fault_types()
    if f.fault not in known:
        raise ApiProblem(422, f"fault {f.fault[:40]!r} is not one of twin's; faults: {', '.join(known)}", "invalid")
    if not _TARGET.fullmatch(f.target):
        raise ApiProblem(
            422, f"fault target {f.target[:80]!r}: NODE or NODE:PORT (letters, digits, '_', '.', '-')", "invalid"
        )
    bad = [a for a in f.args if not _ARG.fullmatch(a)]
    if bad:
        raise ApiProblem(422, f"fault argument {bad[0][:40]!r}: letters, digits, '_', '.', '%', '-'", "invalid")
    return ":".join(["fault", f.fault, f.target, *f.args])


def kept(into: Path) -> int:
    """Bytes of the files the lab's requests left under `into` (its changes and inputs)."""
    total = 0
    for sub in ("changes", "inputs"):
        for dirpath, _, names in os.walk(into / sub):
            total += sum(os.lstat(os.path.join(dirpath, n)).st_size for n in names)
    return total


def room(into: Path, limit: int) -> None:
    """409 with the numbers when the lab's kept request files reach `limit` bytes."""
    held = kept(into)
    if held >= limit:
        raise ApiProblem(
            409,
            f"this lab keeps {held:,} bytes of the files its changes brought, the most a lab keeps "
            f"on this server ({limit:,}); a new lab from a snapshot starts with none",
            "quota",
            quota={"kept_bytes": {"limit": limit, "held": held}},
        )


def spec(
    body: ChangeBody,
    into: Path,
    archive: bytes | None = None,
    nv_file: bytes | None = None,
    nv_node: str | None = None,
    limit: int | None = None,
) -> str:
    """The change as `load_change` takes it, its files written into a new directory under `into`
    (409 when the lab keeps `limit` bytes of them already)."""
    given = [
        k
        for k, v in (
            ("topology", body.topology),
            ("configs", body.configs or archive),
            ("nv", body.nv or nv_file),
            ("fault", body.fault),
        )
        if v
    ]
    if len(given) != 1:
        raise ApiProblem(
            422,
            "give one change: a topology, configs, an nv file (with its node) or a fault"
            + (f"; this request gives {', '.join(given)}" if given else ""),
            "invalid",
        )
    if body.fault is not None:
        return fault_spec(body.fault)
    if limit is not None:
        room(into, limit)
    d = into / "changes" / secrets.token_hex(6)
    d.mkdir(parents=True, mode=0o700)
    if body.topology is not None:
        return str(bodies.topology_file(d, body.topology, body.format))
    if archive is not None:
        return str(bodies.archive(d, archive))
    if body.configs is not None:
        return str(bodies.config_map(d, body.configs))
    node = body.nv.node if body.nv else nv_node
    text = body.nv.commands.encode() if body.nv else nv_file or b""
    if not node or not _TARGET.fullmatch(node) or ":" in node:
        raise ApiProblem(422, "an nv file needs its node (`node`): a node name", "invalid")
    f = d / "commands.nv"
    f.write_bytes(text)
    return f"nv:{node}:{f}"


def from_form(form: dict[str, Any]) -> tuple[ChangeBody, bytes | None, bytes | None, str | None]:
    """A multipart change: (its fields as a body, a configs archive, an nv file, the nv file's node)."""
    unknown = sorted(set(form) - {"topology", "configs", "nv", "node", "format"})
    if unknown:
        raise ApiProblem(
            422,
            f"unknown parts {', '.join(unknown)[:200]}; a change takes topology, configs, nv (with node), format",
            "invalid",
        )
    topo = form.get("topology")
    body = ChangeBody.model_validate(
        {
            "format": form.get("format") or "twin",
            "topology": topo.decode("utf-8", "surrogateescape") if isinstance(topo, bytes) else topo,
        }
    )
    nv = form.get("nv")
    archive = form.get("configs")
    return (
        body,
        archive if isinstance(archive, bytes) else None,
        nv.encode() if isinstance(nv, str) else nv,
        form.get("node") if isinstance(form.get("node"), str) else None,
    )


def forget(spec: str, into: Path) -> None:
    """The files of change `spec` (a plan's, answered already) removed: only a directory of `into`'s changes."""
    path = spec.split(":", 2)[2] if spec.startswith("nv:") else spec
    if spec.startswith("fault:"):
        return
    changes = (into / "changes").resolve()
    p = Path(path).resolve()
    while p.parent != changes and p != p.parent:
        p = p.parent
    if p.parent == changes and p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
