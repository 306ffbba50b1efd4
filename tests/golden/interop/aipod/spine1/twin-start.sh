#!/bin/sh
# spine1 (lab aipod): twin's bring-up of this node once its links exist,
# for runtimes other than twin's own (containerlab runs it with `exec`).
set -e
twin_port() {  # PORT ALIAS: wait for the port, then set it up and label it as twin does
  i=0
  until ip link show dev "$1" >/dev/null 2>&1; do
    i=$((i + 1)); [ "$i" -le 600 ] || { echo "twin: port $1 missing after 60s" >&2; exit 1; }
    sleep 0.1
  done
  ip link set dev "$1" up alias "$2"
}

# its ports, up and labelled
twin_port swp1 'twin:aipod:spine1:swp1->leaf1:swp1'
twin_port swp2 'twin:aipod:spine1:swp2->leaf2:swp1'

# its daemons
/usr/local/bin/twin-node start-frr
