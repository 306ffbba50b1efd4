#!/bin/sh
# leaf1 (lab leafvtep): kernel side of the EVPN overlay on this VTEP, VRF backend: vrf.
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
ip link add red type vrf table 1001
ip link set red up
ip link add vxlan10100 mtu 8950 type vxlan id 10100 local 10.255.0.3 dstport 4789 nolearning tos inherit ttl 64
ip link add br10100 mtu 8950 type bridge
ip link set br10100 master red
ip link set vxlan10100 master br10100
bridge link set dev vxlan10100 learning off
ip link set vxlan10100 up
ip link set br10100 up
ip link add vxlan10101 mtu 8950 type vxlan id 10101 local 10.255.0.3 dstport 4789 nolearning tos inherit ttl 64
ip link add br10101 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10101 master red
ip link set vxlan10101 master br10101
bridge link set dev vxlan10101 learning off neigh_suppress on
ip addr add 10.1.1.1/24 dev br10101
ip link set swp10 master br10101
ip link set swp10 up
ip link set vxlan10101 up
ip link set br10101 up
bridge fdb replace 02:38:c8:47:57:04 dev swp10 master static
ip link add vxlan10102 mtu 8950 type vxlan id 10102 local 10.255.0.3 dstport 4789 nolearning tos inherit ttl 64
ip link add br10102 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10102 master red
ip link set vxlan10102 master br10102
bridge link set dev vxlan10102 learning off neigh_suppress on
ip addr add 10.1.2.1/24 dev br10102
ip link set swp12 master br10102
ip link set swp12 up
ip link set vxlan10102 up
ip link set br10102 up
bridge fdb replace 02:53:37:ed:58:9b dev swp12 master static
ip link add blue type vrf table 1002
ip link set blue up
ip link add vxlan10200 mtu 8950 type vxlan id 10200 local 10.255.0.3 dstport 4789 nolearning tos inherit ttl 64
ip link add br10200 mtu 8950 type bridge
ip link set br10200 master blue
ip link set vxlan10200 master br10200
bridge link set dev vxlan10200 learning off
ip link set vxlan10200 up
ip link set br10200 up
ip link add vxlan10201 mtu 8950 type vxlan id 10201 local 10.255.0.3 dstport 4789 nolearning tos inherit ttl 64
ip link add br10201 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10201 master blue
ip link set vxlan10201 master br10201
bridge link set dev vxlan10201 learning off neigh_suppress on
ip addr add 10.1.1.1/24 dev br10201
ip link set swp11 master br10201
ip link set swp11 up
ip link set vxlan10201 up
ip link set br10201 up
bridge fdb replace 02:b4:e9:cc:26:f5 dev swp11 master static
nft -f /etc/twin/nftables.nft
# once FRR runs and knows the VNIs: the workloads' IP/MAC bindings
ip neigh replace 10.1.1.11 lladdr 02:38:c8:47:57:04 dev br10101 nud permanent
ip neigh replace 10.1.2.11 lladdr 02:53:37:ed:58:9b dev br10102 nud permanent
ip neigh replace 10.1.1.11 lladdr 02:b4:e9:cc:26:f5 dev br10201 nud permanent
