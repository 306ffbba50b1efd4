#!/bin/sh
# dpu1 (lab dpusvc): kernel side of the EVPN overlay on this VTEP, VRF backend: vrf.
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
ip link add red type vrf table 1001
ip link set red up
ip link add vxlan10100 mtu 8950 type vxlan id 10100 local 10.255.0.4 dstport 4789 nolearning tos inherit ttl 64
ip link add br10100 mtu 8950 type bridge
ip link set br10100 master red
ip link set vxlan10100 master br10100
bridge link set dev vxlan10100 learning off
ip link set vxlan10100 up
ip link set br10100 up
ip link add vxlan10101 mtu 8950 type vxlan id 10101 local 10.255.0.4 dstport 4789 nolearning tos inherit ttl 64
ip link add br10101 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10101 master red
ip link set vxlan10101 master br10101
bridge link set dev vxlan10101 learning off neigh_suppress on
ip addr add 10.1.1.1/24 dev br10101
ip link set pf0vf0 master br10101
ip link set pf0vf0 up
ip link set vxlan10101 up
ip link set br10101 up
bridge fdb replace 02:38:c8:47:57:04 dev pf0vf0 master static
ip link add vxlan10102 mtu 8950 type vxlan id 10102 local 10.255.0.4 dstport 4789 nolearning tos inherit ttl 64
ip link add br10102 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10102 master red
ip link set vxlan10102 master br10102
bridge link set dev vxlan10102 learning off neigh_suppress on
ip addr add 10.1.2.1/24 dev br10102
ip link set pf0vf2 master br10102
ip link set pf0vf2 up
ip link set vxlan10102 up
ip link set br10102 up
bridge fdb replace 02:53:37:ed:58:9b dev pf0vf2 master static
ip link add blue type vrf table 1002
ip link set blue up
ip link add vxlan10200 mtu 8950 type vxlan id 10200 local 10.255.0.4 dstport 4789 nolearning tos inherit ttl 64
ip link add br10200 mtu 8950 type bridge
ip link set br10200 master blue
ip link set vxlan10200 master br10200
bridge link set dev vxlan10200 learning off
ip link set vxlan10200 up
ip link set br10200 up
ip link add vxlan10201 mtu 8950 type vxlan id 10201 local 10.255.0.4 dstport 4789 nolearning tos inherit ttl 64
ip link add br10201 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip link set br10201 master blue
ip link set vxlan10201 master br10201
bridge link set dev vxlan10201 learning off neigh_suppress on
ip addr add 10.1.1.1/24 dev br10201
ip link set pf0vf1 master br10201
ip link set pf0vf1 up
ip link set vxlan10201 up
ip link set br10201 up
bridge fdb replace 02:b4:e9:cc:26:f5 dev pf0vf1 master static
nft -f /etc/twin/nftables.nft
ip link add twinpub10100 index 67118964 address 02:74:70:00:27:74 type veth peer name twingw10100 index 50341748 address 02:74:67:00:27:74
ip link set twingw10100 master red
ip link set twinpub10100 up
ip link set twingw10100 up
ip neigh replace 169.254.100.2 lladdr 02:74:67:00:27:74 dev twinpub10100 nud permanent
ip neigh replace 169.254.100.1 lladdr 02:74:70:00:27:74 dev twingw10100 nud permanent
ip route add 192.0.2.17/32 via 169.254.100.2 dev twinpub10100 onlink
ip route add default via 169.254.100.1 dev twingw10100 onlink table 1001
nft -f /etc/twin/gateway-red.nft
ip link add twinpub10200 index 67119064 address 02:74:70:00:27:d8 type veth peer name twingw10200 index 50341848 address 02:74:67:00:27:d8
ip link set twingw10200 master blue
ip link set twinpub10200 up
ip link set twingw10200 up
ip neigh replace 169.254.100.2 lladdr 02:74:67:00:27:d8 dev twinpub10200 nud permanent
ip neigh replace 169.254.100.1 lladdr 02:74:70:00:27:d8 dev twingw10200 nud permanent
ip route add 192.0.2.33/32 via 169.254.100.2 dev twinpub10200 onlink
ip route add default via 169.254.100.1 dev twingw10200 onlink table 1002
nft -f /etc/twin/gateway-blue.nft
ip link add twinifb1 index 83886081 type ifb
ip link set twinifb1 up
tc qdisc replace dev twinifb1 root tbf rate 20000000bit burst 25000 limit 275000
tc qdisc replace dev pf0vf0 handle ffff: ingress
tc filter add dev pf0vf0 parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev twinifb1
ip link add twinifb3 index 83886083 type ifb
ip link set twinifb3 up
tc qdisc replace dev twinifb3 root tbf rate 20000000bit burst 25000 limit 275000
tc qdisc replace dev pf0vf2 handle ffff: ingress
tc filter add dev pf0vf2 parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev twinifb3
ip link add twinifb2 index 83886082 type ifb
ip link set twinifb2 up
tc qdisc replace dev twinifb2 root tbf rate 20000000bit burst 25000 limit 275000
tc qdisc replace dev pf0vf1 handle ffff: ingress
tc filter add dev pf0vf1 parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev twinifb2
# once FRR runs and knows the VNIs: the workloads' IP/MAC bindings
ip neigh replace 10.1.1.11 lladdr 02:38:c8:47:57:04 dev br10101 nud permanent
ip neigh replace 10.1.2.11 lladdr 02:53:37:ed:58:9b dev br10102 nud permanent
ip neigh replace 10.1.1.11 lladdr 02:b4:e9:cc:26:f5 dev br10201 nud permanent
