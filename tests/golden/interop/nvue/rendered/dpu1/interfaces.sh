#!/bin/sh
# dpu1 (lab nvsamples): kernel side of the EVPN overlay on this VTEP as its NVUE declares it (per-vni layout, VRF backend: netns).
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
ip addr add 10.10.20.1/32 dev lo
ip netns add red
ip netns add blue
ip -n red link set lo up
ip link add vxlan4001 netns red index 16781217 mtu 8950 type vxlan id 4001 local 10.10.20.1 dstport 4789 nolearning tos inherit ttl 64
ip -n red link add br4001 index 33558433 mtu 8950 type bridge
ip -n red link set vxlan4001 master br4001
bridge -n red link set dev vxlan4001 learning off
ip -n red link set vxlan4001 up
ip -n red link set br4001 up
ip link add vxlan10 netns red index 16777226 mtu 8950 type vxlan id 10 local 10.10.20.1 dstport 4789 nolearning tos inherit ttl 64
ip -n red link add br10 index 33554442 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip -n red link set vxlan10 master br10
bridge -n red link set dev vxlan10 learning off neigh_suppress on
ip -n red addr add 10.1.10.1/24 dev br10
ip -n red addr add 10.1.10.2/24 dev br10
ip link set pf0vf0 netns red
ip -n red link set pf0vf0 master br10
ip -n red link set pf0vf0 up
ip -n red link set vxlan10 up
ip -n red link set br10 up
bridge -n red fdb replace 02:74:c8:82:a6:46 dev pf0vf0 master static
ip -n blue link set lo up
ip link add vxlan4002 netns blue index 16781218 mtu 8950 type vxlan id 4002 local 10.10.20.1 dstport 4789 nolearning tos inherit ttl 64
ip -n blue link add br4002 index 33558434 mtu 8950 type bridge
ip -n blue link set vxlan4002 master br4002
bridge -n blue link set dev vxlan4002 learning off
ip -n blue link set vxlan4002 up
ip -n blue link set br4002 up
ip link add vxlan20 netns blue index 16777236 mtu 8950 type vxlan id 20 local 10.10.20.1 dstport 4789 nolearning tos inherit ttl 64
ip -n blue link add br20 index 33554452 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip -n blue link set vxlan20 master br20
bridge -n blue link set dev vxlan20 learning off neigh_suppress on
ip -n blue addr add 10.1.20.1/24 dev br20
ip -n blue addr add 10.1.20.2/24 dev br20
ip link set pf0vf1 netns blue
ip -n blue link set pf0vf1 master br20
ip -n blue link set pf0vf1 up
ip -n blue link set vxlan20 up
ip -n blue link set br20 up
bridge -n blue fdb replace 02:58:99:de:d2:d9 dev pf0vf1 master static
ip netns exec red nft -f /etc/twin/nftables-red.nft
ip netns exec blue nft -f /etc/twin/nftables-blue.nft
{ tc qdisc show dev p0 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev p0 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-p0.tc
{ tc qdisc show dev p1 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev p1 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-p1.tc
{ tc -n red qdisc show dev pf0vf0 root | grep -q '^qdisc htb 1: root' || tc -n red qdisc replace dev pf0vf0 root handle 1: htb default 10; } && tc -n red -batch /etc/twin/qos-pf0vf0.tc
{ tc -n blue qdisc show dev pf0vf1 root | grep -q '^qdisc htb 1: root' || tc -n blue qdisc replace dev pf0vf1 root handle 1: htb default 10; } && tc -n blue -batch /etc/twin/qos-pf0vf1.tc
# once FRR runs and knows the VNIs: the workloads' IP/MAC bindings
ip -n red neigh replace 10.1.10.103 lladdr 02:74:c8:82:a6:46 dev br10 nud permanent
ip -n blue neigh replace 10.1.20.104 lladdr 02:58:99:de:d2:d9 dev br20 nud permanent
