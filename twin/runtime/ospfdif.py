"""ospfd's interface settings on a node whose zebra runs the netns VRF backend: sent to ospfd alone.

FRR 10.3's zebra with `-n` aborts on any `interface` block it is sent (mgmtd commits it to zebra by a
name without its namespace: `netns_ifname_split`), and `vtysh` sends one to every daemon; measured on a
running node, `interface swp1` / `ip ospf hello-interval 5` and the `interface swp1 vrf default` form
alike took zebra and staticd down (watchfrr restarted every daemon, BGP down meanwhile). ospfd takes the
same lines sent to it alone (`vtysh -d ospfd`) and runs them. So a node that keeps such settings holds
them in `/etc/frr/ospfd-interfaces.conf`, beside a frr.conf without interface blocks:

- FRR's start sends that file to ospfd alone after frr.conf (the node image: twin-nodectl's boot and
  watchfrr's start of ospfd, through frrcommon.sh's `vtysh_b`, patched by frr-ospfd-interfaces.py), and
  its frr-reload.py leaves interface blocks alone where zebra runs -n (frr-reload-netns.py);
- a reload (`twin.runtime.frr.take`) brings ospfd's running interface blocks to the file's, around
  frr-reload.py: before it, each line ospfd runs and the file lacks is taken away (`no ip ospf X`), and a
  line FRR must take away before it takes another value (an area, an MD5 key), so that a `network`
  statement the reload adds finds no interface area in its way; after it, each line of the file ospfd
  lacks is added (an interface's area once the reload took its instance's networks away). FRR refuses
  an instance with both (`Please remove all network commands first.`).

A node without the file (twin's own rendering, a user's frr.conf) is left as it is.

    wanted = read(ex)                     # the file's blocks, None where the node has no file
    around(ex, wanted, reload)            # frr-reload.py, ospfd's interface blocks brought to the file around it
    left(running(ex), wanted)             # what ospfd runs otherwise than the file, in words
"""

from __future__ import annotations

from typing import Callable

from twin.base import timeouts
from twin.runtime.exec import NodeExec

FILE = "ospfd-interfaces.conf"
PATH = f"/etc/frr/{FILE}"
DAEMON = "ospfd"
# lines FRR takes away before it takes another value (`Must remove previous area config before changing
# ospf area`; `Key already exists` for a key id)
REPLACED = ("ip ospf area", "ip ospf message-digest-key")

Blocks = dict[str, list[str]]  # `interface DEV [vrf X]` -> its lines, as ospfd shows them


def blocks(text: str) -> Blocks:
    """The interface blocks of an ospfd configuration (a file, or `show running-config`): each block's
    head and its lines, stripped; everything else left out."""
    out: Blocks = {}
    head = None
    for raw in text.splitlines():
        line = raw.strip()
        if raw.startswith("interface "):
            head = line
            out.setdefault(head, [])
        elif head is not None and raw.startswith(" ") and line:
            out[head].append(line)
        elif line and not line.startswith("!"):
            head = None  # `exit`, or a line of another context
    return out


def key(line: str) -> str:
    """What a line sets, as its `no` form names it: `ip ospf hello-interval 5` -> `ip ospf hello-interval`,
    `ip ospf message-digest-key 1 md5 K` -> `ip ospf message-digest-key 1`."""
    w = line.split()
    if w[:2] == ["ip", "ospf"] and len(w) > 2:
        return " ".join(w[:4] if w[2] == "message-digest-key" else w[:3])
    return line


def commands(running: Blocks, wanted: Blocks, adds: bool) -> list[list[str]]:
    """Per interface block, the lines that bring ospfd's `running` blocks to `wanted`: its removals
    (`adds` False: the lines ospfd runs that the file lacks, each as `no KEY`, and the old value of a
    `REPLACED` line whose value changes), or its additions (`adds`: the file's lines ospfd lacks)."""
    out = []
    for head in sorted(set(running) | set(wanted)):
        have, want = running.get(head, []), wanted.get(head, [])
        if adds:
            lines = [line for line in want if line not in have]
        else:
            keys = {key(w) for w in want}
            lines = [
                f"no {key(line)}"
                for line in have
                if line not in want and (key(line) not in keys or key(line).startswith(REPLACED))
            ]
        if lines:
            out.append([head, *lines])
    return out


def left(running: Blocks, wanted: Blocks) -> list[str]:
    """What ospfd runs otherwise than the file, in words (nothing: it runs the file)."""
    out = []
    for head in sorted(set(running) | set(wanted)):
        have, want = running.get(head, []), wanted.get(head, [])
        out += [f"ospfd runs, not in {FILE}: {head}: {line}" for line in have if line not in want]
        out += [f"ospfd lacks, of {FILE}: {head}: {line}" for line in want if line not in have]
    return out


def read(ex: NodeExec) -> Blocks | None:
    """The node's file, as blocks (None: the node keeps no such file, nothing is sent to ospfd)."""
    data = ex.read_file(PATH)
    return None if data is None else blocks(data.decode(errors="replace"))


def running(ex: NodeExec) -> Blocks:
    """The interface blocks ospfd runs (ospfd's alone: zebra's and the others' are not its)."""
    return blocks(ex.vtysh("show running-config", timeout=timeouts.VTYSH, daemon=DAEMON))


def send(ex: NodeExec, cmds: list[list[str]]) -> None:
    """Each block's lines to ospfd alone, one vtysh a block (vtysh stops at a line ospfd refuses: the
    error names it)."""
    for block in cmds:
        ex.vtysh("configure terminal", *block, timeout=timeouts.VTYSH, daemon=DAEMON)


def sync(ex: NodeExec, wanted: Blocks, adds: bool) -> None:
    """One half of the reload's work on ospfd's interface blocks (`commands`)."""
    send(ex, commands(running(ex), wanted, adds))


def around(ex: NodeExec, wanted: Blocks | None, reload: Callable[[], object]) -> None:
    """`reload` (frr-reload.py), with ospfd's interface blocks brought to the node's file around it: what
    ospfd must let go before, what it takes after (nothing where the node keeps no file)."""
    if wanted is not None:
        sync(ex, wanted, adds=False)
    reload()
    if wanted is not None:
        sync(ex, wanted, adds=True)
