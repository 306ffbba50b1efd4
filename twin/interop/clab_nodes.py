"""containerlab's node fields in twin's terms: which are carried over, how, and why the others are not.

Carried (`twin.topology.noderun` checks them as a twin topology's fields):
- `binds`: every file and directory, read-only where containerlab says `:ro`; on an FRR node the
  binds of `/etc/frr/frr.conf` and `/etc/frr/daemons` (or of `/etc/frr` as a whole) are its
  config instead (`twin.config.userconf`), and the other entries of a directory bound on
  `/etc/frr` are bound one by one beside them;
- `cmd`, `entrypoint`: a host's (an FRR node's command is twin's, which starts FRR once wired);
- `env` and `env-files`: merged over the levels, `env` over `env-files`, the most specific wins;
- `startup-config`: an FRR node's frr.conf (a path, or the config itself), where no bind gives it;
- `image`: the node's own, run where the engine has it, else twin's node image (`twin up --images`);
- `exec`, `kind`, `group`, `type`;
- `mgmt-ipv4`: a router's address on the lab's management network (`mgmt_of`: the lab's
  `mgmt.ipv4-subnet` and `ipv4-gw`, containerlab's default subnet when nodes pin addresses and
  the file gives none; the network itself is twin's own, `twin-<lab>-mgmt`).
Every other field is named with its reason (`LEFT_OUT`, `mgmt_notes`).
"""

from __future__ import annotations

from pathlib import Path

from twin.kinds.base import FRR_DIR

CONFIG_FILES = ("frr.conf", "daemons")
CARRIED = {
    "kind",
    "group",
    "image",
    "binds",
    "exec",
    "type",
    "cmd",
    "entrypoint",
    "env",
    "env-files",
    "startup-config",
    "mgmt-ipv4",
    "mgmt-ipv6",
}  # mgmt-ipv4: a router's mgmt_ipv4 (mgmt-ipv6: said once)
_NOS = "a setting of network OS kinds twin does not run"
_LIMITS = "twin gives each kind its own limits (memory, tasks), so one node cannot take this host down"
_ORDER = "twin orders the bring-up itself: nodes wired, configured, then the convergence barrier"
LEFT_OUT = {
    "ports": "publishes container ports on this host: twin's nodes have no network outside the lab",
    "network-mode": "twin's nodes have no network but the lab's links and its management network",
    "dns": "twin's nodes have no network outside the lab to resolve names on",
    "sysctls": "twin sets each kind's sysctls (IPv6 on, forwarding, its ECMP hash)",
    "cap-add": "twin gives each kind the capabilities it needs (NET_ADMIN, SYS_ADMIN, NET_RAW) and never more",
    "privileged": "twin never runs a node privileged (and a host like this one refuses it)",
    "security-opts": "twin never loosens a node's confinement",
    "devices": "twin gives a node no device of this host",
    "memory": _LIMITS,
    "cpu": _LIMITS,
    "cpu-set": _LIMITS,
    "shm-size": _LIMITS,
    "user": "nodes run as root: twin's commands in a node and FRR's daemons need it",
    "labels": "twin labels its containers with its own (twin.lab, twin.node) to find what a lab owns",
    "hostname": "a node's hostname is its name",
    "restart-policy": "twin owns the containers' life (`twin down` removes them)",
    "auto-remove": "twin owns the containers' life (`twin down` removes them)",
    "healthcheck": _ORDER,
    "stages": _ORDER,
    "wait-for": _ORDER,
    "startup-delay": _ORDER,
    "runtime": "twin runs its nodes on Docker",
    "aliases": "a node's one name on the management network is twin-<lab>-<node>",
    "license": _NOS,
    "components": _NOS,
    "certificate": _NOS,
    "enforce-startup-config": _NOS,
    "suppress-startup-config": _NOS,
    "credentials": _NOS,
    "config": _NOS,
    "image-pull-policy": "twin pulls no image: a node runs its own where the engine has it (`twin up --images`)",
}
OTHERWISE = "no meaning for twin's nodes"


def left_out_reason(key: str) -> str:
    return LEFT_OUT.get(key, OTHERWISE)


def is_config_target(target: str) -> bool:
    """Is a bind target part of an FRR node's configuration: /etc/frr itself, its frr.conf or daemons?"""
    return target == FRR_DIR or target in (f"{FRR_DIR}/{f}" for f in CONFIG_FILES)


def bind_text(source: Path, target: str, options: str) -> str:
    return f"{source}:{target}" + (f":{options}" if options else "")


def directory_binds(d: Path, options: str) -> list[str]:
    """The entries of a directory bound on /etc/frr, other than the config, bound one by one."""
    if not d.is_dir():
        return []
    return [
        bind_text(p.absolute(), f"{FRR_DIR}/{p.name}", options)
        for p in sorted(d.iterdir())
        if p.name not in CONFIG_FILES
    ]


def env_text(value: object) -> str:
    """An env value as containerlab takes it: text (numbers and booleans as written in YAML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def parse_env(text: str) -> dict[str, str]:
    """NAME=value lines of an env file (comments and blank lines skipped); ValueError names a bad line."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"{line[:60]!r} is not NAME=value")
        out[key.strip()] = value.strip().strip('"').strip("'")
    return out


CLAB_SUBNET = "172.20.20.0/24"  # containerlab's management subnet when a file gives none


def mgmt_of(given: object, pinned: bool, notes: list[str]) -> dict:
    """A twin topology's `mgmt` (as a document's entry) from containerlab's `mgmt` section (`pinned`:
    nodes pin their address); what is left of it goes to `notes`."""
    given = given if isinstance(given, dict) else {}
    out = {k: str(given[c]) for k, c in (("subnet", "ipv4-subnet"), ("gateway", "ipv4-gw")) if given.get(c)}
    if "subnet" not in out and pinned:
        out["subnet"] = CLAB_SUBNET
        notes.append(
            f"nodes pin their management address and the file gives no subnet: containerlab's default {CLAB_SUBNET}"
        )
    rest = sorted(set(given) - {"ipv4-subnet", "ipv4-gw"})
    if rest:
        notes.append(
            f"mgmt: {', '.join(rest)} left out: the management network is twin's own (an internal Docker "
            "network, IPv4), named after the lab"
        )
    return {"mgmt": out} if out else {}


def mgmt_notes(v6: list[str], hosts: list[str]) -> list[str]:
    """What of the nodes' management addresses is left out: IPv6 ones, and hosts' (`v6`, `hosts`: nodes)."""
    out = [f"mgmt-ipv6 of {', '.join(v6)} is left out: twin's management network is IPv4"] if v6 else []
    return out + (
        [
            f"mgmt-ipv4 of {', '.join(hosts)} is left out: a twin host has no management port (a tenant's "
            "workload; `twin exec LAB NODE -- CMD` reaches it)"
        ]
        if hosts
        else []
    )
