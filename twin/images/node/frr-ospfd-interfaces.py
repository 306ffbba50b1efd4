"""Patch FRR's frrcommon.sh so ospfd's interface settings reach ospfd alone, at every start.

FRR 10.3's zebra with the netns VRF backend (-n) aborts on an `interface` block (mgmtd commits
it to zebra by a name without its namespace: `netns_ifname_split`): frr.conf, which `vtysh -b`
sends to every daemon, holds none on such a node. An NVUE node's `interface.<name>.router.ospf`
is `ip ospf ...` lines of interface blocks, ospfd's only: twin writes them to
/etc/frr/ospfd-interfaces.conf, and FRR's config load (`vtysh_b`: the boot's, twin-nodectl's,
and watchfrr's when it starts ospfd again) sends that file to ospfd alone (`vtysh -d ospfd -f`).
"""
import sys

PATH = "/usr/lib/frr/frrcommon.sh"
OLD = """\tlog_success_msg "Sending config with '$cmd'"
\teval "$cmd"
}
"""
NEW = """\tlog_success_msg "Sending config with '$cmd'"
\teval "$cmd"
\tret=$?
\t# twin: ospfd's interface settings, to ospfd alone (zebra -n aborts on an interface block)
\tif [ -r "$C_PATH/ospfd-interfaces.conf" ] && [ -z "$1" -o "$1" = ospfd ]; then
\t\t"$VTYSH" $nsopt -d ospfd -f "$C_PATH/ospfd-interfaces.conf"
\tfi
\treturn $ret
}
"""

src = open(PATH).read()
if "twin: ospfd's interface settings" in src:
    sys.exit(0)
if OLD not in src:
    print(f"frr-ospfd-interfaces: anchor not found in {PATH}; not patched", file=sys.stderr)
    sys.exit(0)
open(PATH, "w").write(src.replace(OLD, NEW, 1))
print("frr-ospfd-interfaces: patched")
