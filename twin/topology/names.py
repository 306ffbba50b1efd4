"""Every naming rule of a topology, in one place, each matched in full.

Each `check_*` returns None when the name is fine, else one line saying what
is wrong and what is allowed. The rest of twin (CLI, Lab, the pytest plugin)
uses `check_lab_name` so a lab name means the same everywhere.

Patterns are ASCII classes matched with `re.fullmatch`: no control character,
no trailing newline, no look-alike letter gets through.
"""

from __future__ import annotations

import re
import shlex
from typing import Iterable, Sequence

from twin.base.errors import TwinError
from twin.topology.problems import quoted

LAB_NAME_RULE = "1-16 lowercase letters, digits or '-', not starting or ending with '-'"
NODE_NAME_RULE = "1-24 lowercase letters, digits or '-', not starting or ending with '-'"
PORT_NAME_RULE = "1-15 letters, digits, '_', '.' or '-'"
VRF_NAME_RULE = "1-15 of a-z 0-9 _ -, starting with a letter"
TENANT_NAME_RULE = VRF_NAME_RULE + " (it is the default VRF name)"
SEGMENT_NAME_RULE = "1-32 of a-z 0-9 _ -, starting with a letter"
MAC_RULE = "a unicast MAC like 00:00:5e:00:01:01"
IMAGE_RULE = (
    "a Docker image reference: [REGISTRY[:PORT]/]PATH[:TAG][@DIGEST], PATH lowercase words joined by "
    "'/', '.', '_' or '-', like quay.io/frrouting/frr:9.1.0 or alpine"
)

LAB_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?")  # use with fullmatch
_NODE = re.compile(r"[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?")
_PORT = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_VRF = re.compile(r"[a-z][a-z0-9_-]{0,14}")
_SEGMENT = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")
# Docker's reference grammar (distribution/reference): a name of at most 255 characters, a tag, a digest
_WORD = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9a-fA-F:.]+\])"
_IMAGE = re.compile(
    rf"(?P<name>(?:{_HOST}(?::[0-9]+)?/)?{_WORD}(?:/{_WORD})*)(?::[\w][\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?",
    re.ASCII,
)
MAX_RANGE = 1024  # names one port range may stand for (`swp1-99999999` is refused)
_RANGE = re.compile(r"(.*?)(\d+)-(\d+)(\D[\w.-]*)?")
_ONE = re.compile(r"(.*?[^\d])\d+(\D[\w.-]*)?")

# Devices twin creates in a node itself: a port or VRF of the same name would collide.
_DEVICES = [
    (re.compile(r"lo"), "lo is the loopback device"),
    (re.compile(r"\.|\.\."), "'.' and '..' are not device names"),
    (re.compile(r"br[0-9]+"), "twin names its segment bridges brN (N: the VNI)"),
    (re.compile(r"vxlan[0-9]+"), "twin names its VXLAN devices vxlanN (N: the VNI)"),
    (re.compile(r"twin.*"), "names starting with 'twin' are twin's own"),
]
_VRF_RESERVED = [
    (re.compile(r"default"), "'default' is the underlay's own VRF in FRR"),
    (re.compile(r"mgmt"), "'mgmt' is the management VRF (Cumulus Linux's; a node's management port)"),
] + _DEVICES


def check_lab_name(name: object) -> str | None:
    """None if `name` is a good lab name, else the reason (it names containers, links and namespaces)."""
    return _check("lab name", name, LAB_NAME, LAB_NAME_RULE)


def check_node_name(name: object) -> str | None:
    return _check("node name", name, _NODE, NODE_NAME_RULE)


def check_port_name(name: object) -> str | None:
    return _check("port name", name, _PORT, PORT_NAME_RULE, _DEVICES)


def check_vrf_name(name: object) -> str | None:
    return _check("VRF name", name, _VRF, VRF_NAME_RULE, _VRF_RESERVED)


def check_tenant_name(name: object) -> str | None:
    return _check("tenant name", name, _VRF, TENANT_NAME_RULE)


def check_segment_name(name: object) -> str | None:
    return _check("segment name", name, _SEGMENT, SEGMENT_NAME_RULE)


def check_image(name: object) -> str | None:
    """None if `name` is a Docker image reference (checked before it reaches Docker), else why not."""
    m = _IMAGE.fullmatch(name) if isinstance(name, str) else None
    if m is None or len(m["name"]) > 255:
        return f"image {quoted(name)} is not allowed: {IMAGE_RULE}"
    return None


def check_command(cmd: object) -> str | None:
    """None if `cmd` is one command line a node can run (an `exec` entry), else why not."""
    if not isinstance(cmd, str) or not cmd.strip():
        return f"{quoted(cmd)} is not a command: an exec entry is one command line, like 'ip link set eth1 up'"
    if len(cmd) > 4096 or any(ord(c) < 32 and c != "\t" for c in cmd):
        return f"{quoted(cmd)} is not one command line: at most 4096 characters, no newline or control character"
    try:
        shlex.split(cmd)
    except ValueError as e:  # run as its words, no shell: quotes must close
        return f"{quoted(cmd)} cannot be split into words ({e}); it runs without a shell, as containerlab runs it"
    return None


def check_mac(mac: object) -> str | None:
    """None if `mac` (any case) is a unicast MAC other than all zeros."""
    text = mac.lower() if isinstance(mac, str) else ""
    if not _MAC.fullmatch(text) or int(text[:2], 16) & 1 or text == "00:00:00:00:00:00":
        return f"{quoted(mac)} is not {MAC_RULE}"
    return None


def _check(
    what: str, name: object, pattern: re.Pattern, rule: str, reserved: Sequence[tuple[re.Pattern, str]] = ()
) -> str | None:
    if not isinstance(name, str) or not pattern.fullmatch(name):
        return f"{what} {quoted(name)} is not allowed: {rule}"
    for taken, why in reserved:
        if taken.fullmatch(name):
            return f"{what} {quoted(name)} is not allowed: {why}"
    return None


def node_key(name: str) -> str:
    """A node name as twin writes it: lowercase, containerlab's '_' and '.' as '-' (`PC1` is pc1,
    `leaf_1` leaf-1): how a containerlab file's names are imported and how a typed name is matched."""
    return re.sub(r"[_.]", "-", name.lower())


def match_node(typed: str, known: Iterable[str]) -> list[str]:
    """The nodes of `known` a user means by `typed`: itself if it is one, else those equal to it
    as twin writes names (`node_key`); more than one is ambiguous."""
    names = list(known)
    if typed in names:
        return [typed]
    key = node_key(typed) if isinstance(typed, str) else None
    return [n for n in names if node_key(n) == key]


def resolve_node(typed: str, known: Iterable[str], lab: str) -> str:
    """The node of lab `lab` that `typed` names (`match_node`), else a TwinError naming the nodes,
    or the ones it could mean."""
    found, names = match_node(typed, known), list(known)
    if len(found) == 1:
        return found[0]
    if found:
        raise TwinError(f"lab {lab!r}: {typed!r} could be node {' or '.join(sorted(found))}; type it exactly")
    raise TwinError(f"lab {lab!r} has no node {typed!r}; nodes: {', '.join(names)}")


def port_range(name: str) -> list[str]:
    """Port ranges as NVUE's `nv set interface` takes them (and a topology's `platform_ports`):
    swp1-4,swp7 -> swp1 swp2 swp3 swp4 swp7; a part starting with a digit takes the prefix before
    it (swp1-2,5-6); ValueError on a huge one."""
    out: list[str] = []
    prefix = ""
    for part in name.split(","):
        if part[:1].isdigit() and prefix:
            part = prefix + part
        m = _RANGE.fullmatch(part)
        if m is None:
            single = _ONE.fullmatch(part)
            prefix = single.group(1) if single else ""
            out.append(part)
            continue
        prefix, lo, hi, suffix = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4) or ""
        if hi < lo or hi - lo >= MAX_RANGE or len(out) + hi - lo >= MAX_RANGE:
            raise ValueError(f"{quoted(name)}: a range names at most {MAX_RANGE} interfaces, low to high")
        out += [f"{prefix}{i}{suffix}" for i in range(lo, hi + 1)]
    return out


def port_ranges(names: Sequence[str]) -> str:
    """Ports written back as ranges (the inverse of `port_range`): swp1 swp2 swp3 swp7 -> swp1-3,swp7."""
    out: list[str] = []
    run: list[tuple[str, int]] = []

    def flush() -> None:
        if run:
            p, lo, hi = run[0][0], run[0][1], run[-1][1]
            out.append(f"{p}{lo}" if lo == hi else f"{p}{lo}-{hi}")
            run.clear()

    for n in names:
        m = re.fullmatch(r"(.*?)(\d+)", n)
        if m and run and m.group(1) == run[-1][0] and int(m.group(2)) == run[-1][1] + 1:
            run.append((m.group(1), int(m.group(2))))
            continue
        flush()
        if m and (m.group(2) == "0" or not m.group(2).startswith("0")):  # swp01 is no number of a range
            run.append((m.group(1), int(m.group(2))))
        else:
            out.append(n)
    flush()
    return ",".join(out)
