#!/bin/sh
# dpu2 (lab aipod): kernel side of the EVPN overlay on this VTEP, VRF backend: vrf.
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
ip link add red type vrf table 1001
ip link set red up
ip link add vxlan10100 mtu 8950 type vxlan id 10100 local 10.255.0.6 dstport 4789 nolearning tos inherit ttl 64
ip link add br10100 mtu 8950 type bridge
ip link set br10100 master red
ip link set vxlan10100 master br10100
bridge link set dev vxlan10100 learning off
ip link set vxlan10100 up
ip link set br10100 up
ip link add vxlan10101 mtu 8950 type vxlan id 10101 local 10.255.0.6 dstport 4789 nolearning tos inherit ttl 64
ip link add br10101 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10101 master red
ip link set vxlan10101 master br10101
bridge link set dev vxlan10101 learning off neigh_suppress on
ip addr add 10.1.1.1/24 dev br10101
ip link set pf0vf0 master br10101
ip link set pf0vf0 up
ip link set vxlan10101 up
ip link set br10101 up
bridge fdb replace 02:cf:00:f9:61:4d dev pf0vf0 master static
ip link add blue type vrf table 1002
ip link set blue up
ip link add vxlan10200 mtu 8950 type vxlan id 10200 local 10.255.0.6 dstport 4789 nolearning tos inherit ttl 64
ip link add br10200 mtu 8950 type bridge
ip link set br10200 master blue
ip link set vxlan10200 master br10200
bridge link set dev vxlan10200 learning off
ip link set vxlan10200 up
ip link set br10200 up
ip link add vxlan10201 mtu 8950 type vxlan id 10201 local 10.255.0.6 dstport 4789 nolearning tos inherit ttl 64
ip link add br10201 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10201 master blue
ip link set vxlan10201 master br10201
bridge link set dev vxlan10201 learning off neigh_suppress on
ip addr add 10.1.1.1/24 dev br10201
ip link set pf0vf1 master br10201
ip link set pf0vf1 up
ip link set vxlan10201 up
ip link set br10201 up
bridge fdb replace 02:56:fc:95:08:05 dev pf0vf1 master static
ip link add vxlan10202 mtu 8950 type vxlan id 10202 local 10.255.0.6 dstport 4789 nolearning tos inherit ttl 64
ip link add br10202 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10202 master blue
ip link set vxlan10202 master br10202
bridge link set dev vxlan10202 learning off neigh_suppress on
ip addr add 10.1.2.1/24 dev br10202
ip link set pf0vf2 master br10202
ip link set pf0vf2 up
ip link set vxlan10202 up
ip link set br10202 up
bridge fdb replace 02:42:80:52:80:2c dev pf0vf2 master static
nft -f /etc/twin/nftables.nft
# once FRR runs and knows the VNIs: the workloads' IP/MAC bindings
ip neigh replace 10.1.1.12 lladdr 02:cf:00:f9:61:4d dev br10101 nud permanent
ip neigh replace 10.1.1.12 lladdr 02:56:fc:95:08:05 dev br10201 nud permanent
ip neigh replace 10.1.2.12 lladdr 02:42:80:52:80:2c dev br10202 nud permanent
