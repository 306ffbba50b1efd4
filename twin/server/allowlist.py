"""What `POST /v1/labs/{name}/exec` runs in a node: an allow-list of commands that read the node
or test its data path, never a shell and nothing that changes it.

    vtysh -c "show ..." [-c "show ..."]      FRR's state (show commands only)
    nv show ...                               NVUE's state (on a node that runs NVUE)
    ip [-j|-d|-s|-4|-6|-br ...] OBJECT [show|list|get ...]   the kernel's tables; `ip netns exec`,
                                              `-batch` and `-force` are not taken
    ping -c N [-W S] [-i S] [-s SIZE] [-I IFACE] ADDRESS      N at most 10

Anything else is 403 naming what is allowed. Words are bounded in number and length, and
hold no control characters.
"""

from __future__ import annotations

import ipaddress
import re

from twin.server.problems import ApiProblem

MAX_WORDS = 32
MAX_WORD = 256
IP_OPTIONS = {"-j", "-json", "-d", "-details", "-s", "-stats", "-4", "-6", "-br", "-brief", "-p", "-pretty"}
IP_OBJECTS = {"link", "addr", "address", "route", "neigh", "neighbour", "rule", "vrf", "maddr", "nexthop", "tunnel"}
IP_ACTIONS = {"show", "list", "ls", "get", "lst"}
_WORD = re.compile(r"[A-Za-z0-9_.:/@%+=,-]+")
_IFACE = re.compile(r"[A-Za-z0-9_.@-]{1,15}")
ALLOWED = (
    "vtysh -c 'show ...', nv show ..., ip [options] OBJECT [show|list|get] ..., "
    "ping -c N (N <= 10) [-W S] [-i S] [-s SIZE] [-I IFACE] ADDRESS"
)


def _no(why: str) -> ApiProblem:
    return ApiProblem(403, f"{why}; exec runs only: {ALLOWED}", "exec-not-allowed")


def check(argv: list[str]) -> list[str]:
    """`argv` if the allow-list takes it, else 403 saying why."""
    if not argv or len(argv) > MAX_WORDS:
        raise _no(f"a command is 1 to {MAX_WORDS} words")
    for w in argv:
        if len(w) > MAX_WORD or not w.isprintable():
            raise _no(f"a word is at most {MAX_WORD} printable characters")
    checker = {"vtysh": _vtysh, "nv": _nv, "ip": _ip, "ping": _ping}.get(argv[0])
    if checker is None:
        raise _no(f"{argv[0][:40]!r} is not an allowed command")
    checker(argv[1:])
    return argv


def _vtysh(args: list[str]) -> None:
    if not args or len(args) % 2:
        raise _no("vtysh takes -c COMMAND pairs")
    for flag, cmd in zip(args[::2], args[1::2]):
        words = cmd.split()
        if flag != "-c" or not words or words[0] not in ("show", "sh"):
            raise _no(f"vtysh -c {cmd[:60]!r}: show commands only")


def _nv(args: list[str]) -> None:
    if not args or args[0] != "show" or not all(_WORD.fullmatch(a) for a in args[1:]):
        raise _no("nv show ... only")


def _ip(args: list[str]) -> None:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        if rest[0] not in IP_OPTIONS:
            raise _no(f"ip option {rest[0][:20]!r} is not taken")
        rest.pop(0)
    if not rest or rest[0] not in IP_OBJECTS:
        raise _no(f"ip objects: {', '.join(sorted(IP_OBJECTS))}")
    if len(rest) > 1 and rest[1] not in IP_ACTIONS:
        raise _no(f"ip {rest[0]} {rest[1][:20]!r}: only {', '.join(sorted(IP_ACTIONS))}")
    if not all(_WORD.fullmatch(a) for a in rest[1:]):
        raise _no("ip's arguments are names, addresses and keywords")


def _ping(args: list[str]) -> None:
    opts, rest = {}, list(args)
    while len(rest) > 1 and rest[0] in ("-c", "-W", "-i", "-s", "-I"):
        opts[rest[0]] = rest[1]
        rest = rest[2:]
    if len(rest) != 1 or "-c" not in opts:
        raise _no("ping -c N [options] ADDRESS: one address, and a count")
    try:
        ipaddress.ip_address(rest[0])
        count, size = int(opts["-c"]), int(opts.get("-s", "56"))
        wait, interval = float(opts.get("-W", "1")), float(opts.get("-i", "1"))
    except ValueError:
        raise _no("ping's address is an IP address, its options numbers") from None
    if not (1 <= count <= 10 and 0 <= size <= 9000 and 0 < wait <= 5 and 0.2 <= interval <= 1):
        raise _no("ping: -c 1..10, -s 0..9000, -W up to 5, -i 0.2..1")
    if "-I" in opts and not _IFACE.fullmatch(opts["-I"]):
        raise _no("ping -I takes an interface name")
