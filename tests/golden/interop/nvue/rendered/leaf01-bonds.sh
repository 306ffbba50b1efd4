#!/bin/sh
# leaf01 (lab nvsamples): kernel side of the EVPN overlay on this VTEP as its NVUE declares it (per-vni layout, VRF backend: vrf).
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
[ -e /run/netns/twin-uncabled ] || ip netns add twin-uncabled
ip link add swp5 index 50331656 address 02:6b:9c:9c:55:b9 type veth peer name swp5 index 50331657 address 02:0e:ff:2a:59:81 netns twin-uncabled
ip link add swp6 index 50331658 address 02:37:3e:bd:7d:b8 type veth peer name swp6 index 50331659 address 02:cd:29:2f:d2:5a netns twin-uncabled
ip link add bond1 type bond mode 802.3ad lacp_rate fast miimon 100 xmit_hash_policy layer3+4 min_links 1
ip link set swp1 down
ip link set swp1 master bond1
ip link set bond1 up
ip link add bond2 type bond mode 802.3ad lacp_rate fast miimon 100 xmit_hash_policy layer3+4 min_links 1
ip link set swp5 down
ip link set swp5 master bond2
ip link set swp6 down
ip link set swp6 master bond2
ip link set bond2 up
ip addr add 10.10.10.1/32 dev lo
ip link add red type vrf table 1001
ip link set red up
ip link add vxlan4001 mtu 8950 type vxlan id 4001 local 10.10.10.1 dstport 4789 nolearning tos inherit ttl 64
ip link add br4001 mtu 8950 type bridge
ip link set br4001 master red
ip link set vxlan4001 master br4001
bridge link set dev vxlan4001 learning off
ip link set vxlan4001 up
ip link set br4001 up
ip link add vxlan10 mtu 8950 type vxlan id 10 local 10.10.10.1 dstport 4789 nolearning tos inherit ttl 64
ip link add br10 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10 master red
ip link set vxlan10 master br10
bridge link set dev vxlan10 learning off neigh_suppress on
ip addr add 10.1.10.1/24 dev br10
ip addr add 10.1.10.2/24 dev br10
ip link set bond1 master br10
ip link set bond1 up
ip link set vxlan10 up
ip link set br10 up
bridge fdb replace 02:66:80:8d:fa:5f dev bond1 master static
ip link add blue type vrf table 1002
ip link set blue up
ip link add vxlan4002 mtu 8950 type vxlan id 4002 local 10.10.10.1 dstport 4789 nolearning tos inherit ttl 64
ip link add br4002 mtu 8950 type bridge
ip link set br4002 master blue
ip link set vxlan4002 master br4002
bridge link set dev vxlan4002 learning off
ip link set vxlan4002 up
ip link set br4002 up
ip link add vxlan20 mtu 8950 type vxlan id 20 local 10.10.10.1 dstport 4789 nolearning tos inherit ttl 64
ip link add br20 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br20 master blue
ip link set vxlan20 master br20
bridge link set dev vxlan20 learning off neigh_suppress on
ip addr add 10.1.20.1/24 dev br20
ip addr add 10.1.20.2/24 dev br20
ip link set swp2 master br20
ip link set swp2 up
ip link set vxlan20 up
ip link set br20 up
bridge fdb replace 02:70:5f:7b:2c:9e dev swp2 master static
nft -f /etc/twin/nftables.nft
ip addr add 192.0.2.1/31 dev bond2
ip link set bond2 up
ip link set swp5 up
ip link set swp6 up
{ tc qdisc show dev swp1 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev swp1 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-swp1.tc
{ tc qdisc show dev swp2 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev swp2 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-swp2.tc
{ tc qdisc show dev swp51 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev swp51 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-swp51.tc
{ tc qdisc show dev swp52 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev swp52 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-swp52.tc
# once FRR runs and knows the VNIs: the workloads' IP/MAC bindings
ip neigh replace 10.1.10.101 lladdr 02:66:80:8d:fa:5f dev br10 nud permanent
ip neigh replace 10.1.20.102 lladdr 02:70:5f:7b:2c:9e dev br20 nud permanent
