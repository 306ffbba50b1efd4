"""A node's bring-up as one shell script, for runtimes that are not twin's own.

twin's bring-up (twin.lifecycle.bringup.configure_node) does, once a node's links exist:
its ports up and labelled, the kernel steps of its overlay (what
`interfaces.sh` shows), its daemons, and on a VTEP, once zebra knows the VNIs,
the workloads' IP/MAC bindings. This module writes the same sequence as
`twin-start.sh`, which containerlab (and Clabernetes) run in the node with
`exec` (the node's own exec commands follow it, each its own); every wait is bounded and
says what it waited for.
"""

from __future__ import annotations

import shlex

from twin.base.timeouts import HOST_PORTS, VNIS_UP
from twin.config.naming import link_alias as port_alias
from twin.config.overlay import Backend, bindings, loopback_steps, plan
from twin.intent import Intent
from twin.kinds import get as kind_of
from twin.kinds.base import NODE_DIR
from twin.topology.model import Fabric

START_SCRIPT = "twin-start.sh"
START_PATH = f"{NODE_DIR}/{START_SCRIPT}"
PORTS_UP = 60  # seconds for every port of the node to appear (the runtime attaches them)
POLL = 0.1  # seconds between two looks while waiting

# containerlab's `linux` kind sets these sysctls itself, over the node's own; the
# script puts back the kind's value where it differs (e.g. a host's disabled IPv6).
CLAB_LINUX_SYSCTLS = {"net.ipv6.conf.all.disable_ipv6": "0"}

_HELPERS = f"""\
twin_port() {{  # PORT ALIAS: wait for the port, then set it up and label it as twin does
  i=0
  until ip link show dev "$1" >/dev/null 2>&1; do
    i=$((i + 1)); [ "$i" -le {int(PORTS_UP / POLL)} ] || \
{{ echo "twin: port $1 missing after {PORTS_UP}s" >&2; exit 1; }}
    sleep {POLL}
  done
  ip link set dev "$1" up alias "$2"
}}"""

_VNI_HELPER = f"""\
twin_vnis() {{  # VNI...: wait until zebra knows every VNI (as `show evpn vni detail json` lists them)
  i=0
  until vtysh -c 'show evpn vni detail json' 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
entries = doc if isinstance(doc, list) else list(doc.values()) if isinstance(doc, dict) else []
known = {{int(e["vni"]) for e in entries if isinstance(e, dict) and "vni" in e}}
sys.exit(0 if {{int(v) for v in sys.argv[1:]}} <= known else 1)' "$@" 2>/dev/null; do
    i=$((i + 1)); [ "$i" -le {int(VNIS_UP / POLL)} ] || \
{{ echo "twin: VNIs $* not in zebra after {VNIS_UP:.0f}s" >&2; exit 1; }}
    sleep {POLL}
  done
}}"""


# A host's own command (cmd, entrypoint) starts once its ports are up, as containerlab's images wait
# for theirs (CLAB_INTFS) before their command: a script that configures eth1 finds it. Run as
# `sh -c WAIT_THEN_EXEC twin-wait COMMAND...` (twin's runtime) or from the file WAIT_SCRIPT (an export).
WAIT_SCRIPT = "twin-wait.sh"


def wait_then_exec(ports: list[str], sysfs: str = "/sys/class/net") -> str:
    """sh that waits until every port exists and is up (twin set it up), then runs its arguments. A
    port's flags are read once they are there: its directory can appear before its attributes do (a
    port moved into the node), and an empty value in sh's arithmetic ends the script (exit 2)."""
    return f"""for p in {" ".join(ports)}; do
  n=0
  until f=$(cat {sysfs}/$p/flags 2>/dev/null) && [ -n "$f" ] && [ $(( $f & 1 )) = 1 ]; do
    n=$((n + 1)); [ $n -le {int(HOST_PORTS / POLL)} ] || \
{{ echo "twin: port $p of this node never came up" >&2; exit 1; }}
    sleep {POLL}
  done
done
exec "$@"
"""


def start_script(fabric: Fabric, node: str, backend: Backend, frr_conf: str | None = None) -> str:
    """The whole bring-up of `node` once its links exist, as `sh` commands (`frr_conf`: the one it
    runs, when it is the user's: the topology's loopback goes on lo where that file puts none)."""
    steps = (loopback_steps(fabric, node, backend, frr_conf) if frr_conf is not None else []) + plan(
        fabric, node, backend
    )
    later = bindings(fabric, node, backend)
    lines = _head(fabric, node, bool(later))
    lines += ["", "# its ports, up and labelled"] + _ports(fabric, node)
    lines += _sysctls(fabric, node)
    if steps:
        lines += ["", f"# kernel side (interfaces.sh), VRF backend: {backend}"] + [s.command() for s in steps]
    start = kind_of(fabric.nodes[node].kind).start
    if start:
        lines += ["", "# its daemons", shlex.join(start)]
    if later:
        lines += [
            "",
            "# once zebra knows the VNIs: the workloads' IP/MAC bindings",
            "twin_vnis " + " ".join(str(v) for v in sorted(Intent(fabric).nodes[node].vnis)),
        ] + [s.command() for s in later]
    return "\n".join(lines) + "\n"


def _head(fabric: Fabric, node: str, vteps: bool) -> list[str]:
    return [
        "#!/bin/sh",
        f"# {node} (lab {fabric.name}): twin's bring-up of this node once its links exist,",
        "# for runtimes other than twin's own (containerlab runs it with `exec`).",
        "set -e",
        _HELPERS,
    ] + ([_VNI_HELPER] if vteps else [])


def _ports(fabric: Fabric, node: str) -> list[str]:
    out = []
    for p in fabric.nodes[node].ports:
        label = port_alias(fabric.name, f"{node}:{p.name}", f"{p.peer_node}:{p.peer_port}")
        out.append(f"twin_port {p.name} {shlex.quote(label)}")
    return out


def _sysctls(fabric: Fabric, node: str) -> list[str]:
    wanted = kind_of(fabric.nodes[node].kind).sysctls
    fixes = [(k, v) for k, v in wanted.items() if k in CLAB_LINUX_SYSCTLS and CLAB_LINUX_SYSCTLS[k] != v]
    if not fixes:
        return []
    return ["", "# sysctls of the kind that containerlab's linux kind overrides"] + [
        f"echo {v} > /proc/sys/{k.replace('.', '/')} || echo 'twin: cannot set {k}={v}' >&2" for k, v in fixes
    ]
