"""Patch FRR's frr-reload.py for the netns VRF backend (zebra -n).

zebra shows `netns /run/netns/<vrf>` under each `vrf` in the running config; it
is not in frr.conf and cannot be configured, yet frr-reload.py (8.4) sends
`no netns ...` for it, which cuts every tenant VRF off its namespace. Keep
those lines, like the other lines frr-reload knows it must never remove.
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

src = open(PATH).read()
if "twin: zebra -n" in src:
    sys.exit(0)
if ANCHOR not in src:
    print(f"frr-reload-netns: anchor not found in {PATH}; FRR changed, patch not applied", file=sys.stderr)
    sys.exit(0)
open(PATH, "w").write(src.replace(ANCHOR, PATCH, 1))
print("frr-reload-netns: patched")
