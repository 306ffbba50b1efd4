#!/bin/sh
# leaf01 (lab nvsamples): kernel side of the EVPN overlay on this VTEP as its NVUE declares it (vlan-aware layout, VRF backend: vrf).
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
ip addr add 10.10.10.1/32 dev lo
ip link add red type vrf table 1001
ip link set red up
ip link add blue type vrf table 1002
ip link set blue up
ip link add br_default mtu 8950 type bridge vlan_filtering 1 vlan_default_pvid 0
ip link set br_default up
ip link add vxlan48 mtu 8950 type vxlan external local 10.10.10.1 dstport 4789 nolearning tos inherit ttl 64
ip link set vxlan48 master br_default
bridge link set dev vxlan48 vlan_tunnel on
bridge link set dev vxlan48 learning off neigh_suppress on
ip link set vxlan48 up
bridge vlan add dev br_default vid 4000 self
bridge vlan add dev vxlan48 vid 4000 tunnel_info id 4001
ip link add link br_default name vlan4000_l3 type vlan id 4000
ip link set vlan4000_l3 master red
ip link set vlan4000_l3 up
bridge vlan add dev br_default vid 10 self
bridge vlan add dev vxlan48 vid 10 tunnel_info id 10
ip link add link br_default name vlan10 type vlan id 10
ip link set vlan10 master red
ip link set vlan10 up
ip addr add 10.1.10.2/24 dev vlan10
ip link add link vlan10 name vlan10-v0 address 00:00:5e:00:01:01 type macvlan mode private
ip link set vlan10-v0 master red
ip addr add 10.1.10.1/24 dev vlan10-v0
ip link set vlan10-v0 up
ip link set swp1 master br_default
bridge vlan add dev swp1 vid 10 pvid untagged
ip link set swp1 up
bridge fdb replace 02:66:80:8d:fa:5f dev swp1 master static vlan 10
bridge vlan add dev br_default vid 4001 self
bridge vlan add dev vxlan48 vid 4001 tunnel_info id 4002
ip link add link br_default name vlan4001_l3 type vlan id 4001
ip link set vlan4001_l3 master blue
ip link set vlan4001_l3 up
bridge vlan add dev br_default vid 20 self
bridge vlan add dev vxlan48 vid 20 tunnel_info id 20
ip link add link br_default name vlan20 type vlan id 20
ip link set vlan20 master blue
ip link set vlan20 up
ip addr add 10.1.20.2/24 dev vlan20
ip link add link vlan20 name vlan20-v0 address 00:00:5e:00:01:01 type macvlan mode private
ip link set vlan20-v0 master blue
ip addr add 10.1.20.1/24 dev vlan20-v0
ip link set vlan20-v0 up
ip link set swp2 master br_default
bridge vlan add dev swp2 vid 20 pvid untagged
ip link set swp2 up
bridge fdb replace 02:70:5f:7b:2c:9e dev swp2 master static vlan 20
nft -f /etc/twin/nftables.nft
{ tc qdisc show dev swp1 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev swp1 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-swp1.tc
{ tc qdisc show dev swp2 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev swp2 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-swp2.tc
{ tc qdisc show dev swp51 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev swp51 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-swp51.tc
{ tc qdisc show dev swp52 root | grep -q '^qdisc htb 1: root' || tc qdisc replace dev swp52 root handle 1: htb default 10; } && tc -batch /etc/twin/qos-swp52.tc
# once FRR runs and knows the VNIs: the workloads' IP/MAC bindings
ip neigh replace 10.1.10.101 lladdr 02:66:80:8d:fa:5f dev vlan10 nud permanent
ip neigh replace 10.1.20.102 lladdr 02:70:5f:7b:2c:9e dev vlan20 nud permanent
