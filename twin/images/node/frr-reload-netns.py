"""Patch FRR's frr-reload.py for the netns VRF backend (zebra -n).

zebra shows `netns /run/netns/<vrf>` under each `vrf` in the running config; it
is not in frr.conf and cannot be configured, yet frr-reload.py (8.4) sends
`no netns ...` for it, which cuts every tenant VRF off its namespace. Keep
those lines, like the other lines frr-reload knows it must never remove.

FRR 10.3's zebra -n aborts on any `interface` block it is sent (mgmtd commits it to
zebra by a name without the namespace: `netns_ifname_split`), and frr-reload sends
one to every daemon, to add or to remove it. Where zebra runs -n, frr-reload leaves
interface blocks alone, the file's and the running ones: an NVUE node's interface
settings are ospfd's (`ip ospf ...`), kept in /etc/frr/ospfd-interfaces.conf and sent
to ospfd alone by twin (`vtysh -d ospfd`, twin.runtime.ospfdif) and at FRR's start
(frr-ospfd-interfaces.py).
"""
import sys

PATH = "/usr/lib/frr/frr-reload.py"
ANCHOR = """            log.info('"%s" cannot be removed' % (ctx_keys[-1],))
            lines_to_del_to_del.append((ctx_keys, line))
"""
PATCH = ANCHOR + """
        # twin: zebra -n shows `netns /run/netns/X` under each vrf; never remove it
        elif ctx_keys[0].startswith("vrf ") and line and line.startswith("netns "):
            lines_to_del_to_del.append((ctx_keys, line))
"""
SAVE = '''        Save the provided key and lines as a context
        """
        if not key:
            return
'''
SAVE_PATCH = SAVE + '''        # twin: zebra -n aborts on an interface block: never sent from here (ospfd's are twin's)
        if key[0].startswith("interface ") and _twin_zebra_netns():
            return
'''
CLASS = "class VtyshException(Exception):"
NETNS = '''_TWIN_NETNS = []


def _twin_zebra_netns():
    """twin: does zebra run with the netns VRF backend (-n)? Read once, from its command line."""
    if not _TWIN_NETNS:
        try:
            with open("/var/run/frr/zebra.pid") as f:
                pid = int(f.read().strip())
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                _TWIN_NETNS.append(b"-n" in f.read().split(b"\\0"))
        except (OSError, ValueError):
            _TWIN_NETNS.append(False)
    return _TWIN_NETNS[0]


''' + CLASS

src = open(PATH).read()
for anchor, patched, marker in ((ANCHOR, PATCH, "twin: zebra -n shows"), (SAVE, SAVE_PATCH, "twin: zebra -n aborts"), (CLASS, NETNS, "_TWIN_NETNS")):
    if marker in src:
        continue
    if src.count(anchor) != 1:
        print(f"frr-reload-netns: anchor not found in {PATH}; FRR changed, {marker} not patched", file=sys.stderr)
        continue
    src = src.replace(anchor, patched, 1)
    print(f"frr-reload-netns: patched ({marker})")
open(PATH, "w").write(src)
