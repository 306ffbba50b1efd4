#!/bin/bash
# h3: its address and default route, then idle (its container's command: cmd: bash /setup.sh)
set -e
ip addr add 10.2.1.13/24 dev eth1
ip link set eth1 up
ip route add default via 10.2.1.1
echo "h3: 10.2.1.13/24 via 10.2.1.1"
sleep INF
