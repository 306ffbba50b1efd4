#!/bin/sh
# dpu1 (lab aipod): twin's bring-up of this node once its links exist,
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
twin_vnis() {  # VNI...: wait until zebra knows every VNI (as `show evpn vni detail json` lists them)
  i=0
  until vtysh -c 'show evpn vni detail json' 2>/dev/null | python3 -c '
import json, sys
doc = json.load(sys.stdin)
entries = doc if isinstance(doc, list) else list(doc.values()) if isinstance(doc, dict) else []
known = {int(e["vni"]) for e in entries if isinstance(e, dict) and "vni" in e}
sys.exit(0 if {int(v) for v in sys.argv[1:]} <= known else 1)' "$@" 2>/dev/null; do
    i=$((i + 1)); [ "$i" -le 600 ] || { echo "twin: VNIs $* not in zebra after 60s" >&2; exit 1; }
    sleep 0.1
  done
}

# its ports, up and labelled
twin_port p0 'twin:aipod:dpu1:p0->leaf1:swp3'
twin_port p1 'twin:aipod:dpu1:p1->leaf2:swp3'
twin_port pf0vf0 'twin:aipod:dpu1:pf0vf0->host1a:eth1'
twin_port pf0vf1 'twin:aipod:dpu1:pf0vf1->host1b:eth1'
twin_port pf0vf2 'twin:aipod:dpu1:pf0vf2->host1c:eth1'

# kernel side (interfaces.sh), VRF backend: netns
ip addr add 10.255.0.5/32 dev lo
ip netns add red
ip netns add blue
ip -n red link set lo up
ip link add vxlan10100 netns red index 16787316 mtu 8950 type vxlan id 10100 local 10.255.0.5 dstport 4789 nolearning tos inherit ttl 64
ip -n red link add br10100 index 33564532 mtu 8950 type bridge
ip -n red link set vxlan10100 master br10100
bridge -n red link set dev vxlan10100 learning off
ip -n red link set vxlan10100 up
ip -n red link set br10100 up
ip link add vxlan10101 netns red index 16787317 mtu 8950 type vxlan id 10101 local 10.255.0.5 dstport 4789 nolearning tos inherit ttl 64
ip -n red link add br10101 index 33564533 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip -n red link set vxlan10101 master br10101
bridge -n red link set dev vxlan10101 learning off neigh_suppress on
ip -n red addr add 10.1.1.1/24 dev br10101
ip link set pf0vf0 netns red
ip -n red link set pf0vf0 master br10101
ip -n red link set pf0vf0 up
ip -n red link set vxlan10101 up
ip -n red link set br10101 up
bridge -n red fdb replace 02:38:c8:47:57:04 dev pf0vf0 master static
ip link add vxlan10102 netns red index 16787318 mtu 8950 type vxlan id 10102 local 10.255.0.5 dstport 4789 nolearning tos inherit ttl 64
ip -n red link add br10102 index 33564534 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip -n red link set vxlan10102 master br10102
bridge -n red link set dev vxlan10102 learning off neigh_suppress on
ip -n red addr add 10.1.2.1/24 dev br10102
ip link set pf0vf2 netns red
ip -n red link set pf0vf2 master br10102
ip -n red link set pf0vf2 up
ip -n red link set vxlan10102 up
ip -n red link set br10102 up
bridge -n red fdb replace 02:53:37:ed:58:9b dev pf0vf2 master static
ip -n blue link set lo up
ip link add vxlan10200 netns blue index 16787416 mtu 8950 type vxlan id 10200 local 10.255.0.5 dstport 4789 nolearning tos inherit ttl 64
ip -n blue link add br10200 index 33564632 mtu 8950 type bridge
ip -n blue link set vxlan10200 master br10200
bridge -n blue link set dev vxlan10200 learning off
ip -n blue link set vxlan10200 up
ip -n blue link set br10200 up
ip link add vxlan10201 netns blue index 16787417 mtu 8950 type vxlan id 10201 local 10.255.0.5 dstport 4789 nolearning tos inherit ttl 64
ip -n blue link add br10201 index 33564633 address 00:00:5e:00:01:01 mtu 8950 type bridge
ip -n blue link set vxlan10201 master br10201
bridge -n blue link set dev vxlan10201 learning off neigh_suppress on
ip -n blue addr add 10.1.1.1/24 dev br10201
ip link set pf0vf1 netns blue
ip -n blue link set pf0vf1 master br10201
ip -n blue link set pf0vf1 up
ip -n blue link set vxlan10201 up
ip -n blue link set br10201 up
bridge -n blue fdb replace 02:b4:e9:cc:26:f5 dev pf0vf1 master static
ip netns exec red nft -f /etc/twin/nftables-red.nft
ip netns exec blue nft -f /etc/twin/nftables-blue.nft

# its daemons
/usr/local/bin/twin-node start-frr

# once zebra knows the VNIs: the workloads' IP/MAC bindings
twin_vnis 10100 10101 10102 10200 10201
ip -n red neigh replace 10.1.1.11 lladdr 02:38:c8:47:57:04 dev br10101 nud permanent
ip -n red neigh replace 10.1.2.11 lladdr 02:53:37:ed:58:9b dev br10102 nud permanent
ip -n blue neigh replace 10.1.1.11 lladdr 02:b4:e9:cc:26:f5 dev br10201 nud permanent
