"""What a node runs beyond what its kind gives it: the user's files (binds), a host's own
command (cmd, entrypoint) and environment, each checked as containerlab would take it.

- `binds`: 'SOURCE:TARGET[:OPTIONS]', SOURCE relative to the topology file (`~` expanded) and
  existing (containerlab refuses a missing one too), TARGET an absolute path in the node, not
  one twin's own mounts hold (an FRR node's config is given as configs: `--configs DIR`, or the
  binds of a containerlab file); OPTIONS a comma list of Docker's bind options, `ro` read-only;
- `cmd`, `entrypoint`: split into words as containerlab splits them (shell rules); for kinds that
  run no daemon of twin's (hosts): an FRR node's command is twin's, which starts FRR once wired;
- `env`: NAME=value pairs, NAME a shell variable name.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from pathlib import Path

from twin.kinds import Kind
from twin.kinds.base import FRR_DIR, NODE_DIR
from twin.topology.model import Bind
from twin.topology.problems import Problems, quoted
from twin.topology.schema import NodeSpec

OPTIONS = {"ro", "rw", "z", "Z", "shared", "slave", "private", "rshared", "rslave", "rprivate", "nocopy"}
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
OWN = {
    "/": "the node's root",
    "/proc": "the kernel's",
    "/sys": "the kernel's",
    "/dev": "the kernel's",
    NODE_DIR: "twin's (the node's lab directory)",
}
CONFIG = (FRR_DIR, f"{FRR_DIR}/frr.conf", f"{FRR_DIR}/daemons")
MAX_ARGS = 4096


def node_runtime(name: str, spec: NodeSpec, kind: Kind, source: str, problems: Problems) -> dict:
    """The Node fields of what node `name` runs (binds, cmd, entrypoint, env); problems added."""
    out: dict = {"binds": _binds(name, spec.binds or [], kind, source, problems)}
    for field in ("cmd", "entrypoint"):
        text = getattr(spec, field)
        if text is None:
            continue
        if kind.start is not None:
            problems.add(
                ("nodes", name, field),
                f"a {kind.name} runs twin's command, which starts FRR once the node is wired; {field} is for hosts",
            )
            continue
        words = _words(text)
        if isinstance(words, str):
            problems.add(("nodes", name, field), words)
        else:
            out[field] = words
    env = spec.env or {}
    for key, value in env.items():
        if not _ENV.fullmatch(key):
            problems.add(
                ("nodes", name, "env", key),
                f"{quoted(key)} is not an environment variable name: "
                "letters, digits and '_', not starting with a digit",
            )
        elif "\0" in value or len(value) > 32768:
            problems.add(("nodes", name, "env", key), "a value is text of at most 32768 characters without NUL")
    out["env"] = dict(env)
    return out


def _words(text: str) -> tuple[str, ...] | str:
    try:
        words = tuple(shlex.split(text))
    except ValueError as e:
        return f"{quoted(text)} cannot be split into words ({e}), as containerlab splits it"
    if not words or len(text) > MAX_ARGS or "\0" in text:
        return f"{quoted(text)} is not a command: words of at most {MAX_ARGS} characters in all, like 'bash /setup.sh'"
    return words


def _binds(name: str, binds: list[str], kind: Kind, source: str, problems: Problems) -> tuple[Bind, ...]:
    base = Path(source).parent if source else Path.cwd()
    out: dict[str, Bind] = {}
    for i, text in enumerate(binds):
        at = ("nodes", name, "binds", i)
        bind = parse_bind(text, base)
        if isinstance(bind, str):
            problems.add(at, bind)
            continue
        why = _taken(bind.target, kind)
        if why:
            problems.add(at, why)
        elif bind.target in out:
            problems.add(at, f"{bind.target} is bound twice in {name} (also {out[bind.target].source}); keep one")
        elif not Path(bind.source).exists():
            problems.add(at, f"{bind.source}: no such file or directory (containerlab refuses a missing source too)")
        else:
            out[bind.target] = bind
    return tuple(out.values())


def parse_bind(text: str, base: Path) -> Bind | str:
    """A Bind of 'SOURCE:TARGET[:OPTIONS]' (SOURCE relative to `base`), or why it is not one."""
    parts = text.split(":") if isinstance(text, str) else []
    if len(parts) not in (2, 3) or not parts[0] or not parts[1] or "\0" in text:
        return f"{quoted(text)} is not a bind: 'SOURCE:TARGET' or 'SOURCE:TARGET:ro', like 'leaf1/setup.sh:/setup.sh'"
    src, target = parts[0], parts[1]
    options = set(parts[2].split(",")) if len(parts) == 3 else set()
    if options - OPTIONS:
        return (
            f"{quoted(text)}: unknown bind option(s) {', '.join(sorted(options - OPTIONS))}; options: ro, rw "
            "(and Docker's z, Z, shared, slave, private, nocopy...)"
        )
    if not target.startswith("/") or any(p in ("..", ".") for p in target.split("/")):
        return f"{quoted(text)}: the target {quoted(target)} is not an absolute path in the node, like /setup.sh"
    p = Path(src).expanduser()
    return Bind(
        source=str((p if p.is_absolute() else base / p).absolute()),
        target=posixpath.normpath(target),
        read_only="ro" in options,
    )


def _taken(target: str, kind: Kind) -> str:
    """Why `target` cannot be bound in a node of `kind` ("" when it can)."""
    for own, whose in OWN.items():
        if target == own or (own != "/" and own != "/dev" and target.startswith(own + "/")):
            return f"{target} is {whose}: bind elsewhere"
    if kind.runs_frr and target in CONFIG:
        return (
            f"{target} is the FRR configuration of this {kind.name}: give its frr.conf (and daemons) with "
            "--configs DIR (DIR/<node>/frr.conf), or bind them in a containerlab file"
        )
    return ""
