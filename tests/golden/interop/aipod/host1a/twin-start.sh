#!/bin/sh
# host1a (lab aipod): twin's bring-up of this node once its links exist,
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
twin_port eth1 'twin:aipod:host1a:eth1->dpu1:pf0vf0'

# sysctls of the kind that containerlab's linux kind overrides
echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 || echo 'twin: cannot set net.ipv6.conf.all.disable_ipv6=1' >&2

# kernel side (interfaces.sh), VRF backend: netns
ip link set eth1 address 02:38:c8:47:57:04
ip addr add 10.1.1.11/24 dev eth1
ip link set eth1 up
ip route add default via 10.1.1.1 dev eth1
