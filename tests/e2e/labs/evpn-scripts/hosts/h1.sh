#!/bin/bash
# h1: its address and default route, then idle (its container's command: cmd: bash /setup.sh)
set -e
ip addr add 10.1.1.11/24 dev eth1
ip link set eth1 up
ip route add default via 10.1.1.1
echo "h1: 10.1.1.11/24 via 10.1.1.1"
sleep INF
