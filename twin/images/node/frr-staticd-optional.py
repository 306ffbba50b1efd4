"""Patch FRR's frrcommon.sh so staticd follows the daemons file like other daemons.

FRR 8.4 and 10 start zebra, mgmtd (10) and staticd whatever the daemons file says. twin's
nodes carry no static routes: their daemons file says `staticd=no`, and this lets it count,
which saves a daemon per node (~6 MiB, and its share of the start). A daemons file that does
not mention staticd (a user's) still starts it, as before. zebra and mgmtd stay mandatory.
"""
import sys

PATH = "/usr/lib/frr/frrcommon.sh"
OLD = '[ "$daemon" = zebra -o "$daemon" = staticd -o "$daemon" = mgmtd ] && cfg=yes'
NEW = ('[ "$daemon" = zebra -o "$daemon" = mgmtd ] && cfg=yes\n'
       '\t\t[ "$daemon" = staticd -a "$cfg" != "no" ] && cfg=yes  # twin: staticd=no counts')

src = open(PATH).read()
if "twin: staticd=no counts" in src:
    sys.exit(0)
if OLD not in src:
    print(f"frr-staticd-optional: anchor not found in {PATH}; staticd stays mandatory", file=sys.stderr)
    sys.exit(0)
open(PATH, "w").write(src.replace(OLD, NEW, 1))
print("frr-staticd-optional: patched")
