#!/bin/bash
# leaf2: the kernel side of its EVPN overlay, run once the lab is deployed:
#   containerlab: docker exec clab-evpn-leaf2 /setup.sh     twin: twin exec evpn leaf2 -- /setup.sh
# The VRFs are network namespaces, as on a kernel without VRF devices (CONFIG_NET_VRF) they must
# be: zebra runs with -n (daemons), so FRR's "vrf red" is the namespace red. Each device gets an
# index of its own across the namespaces (zebra -n tells devices apart by index), and a VXLAN
# device is made from the default namespace, where its tunnel lives, straight into its VRF's.
set -euo pipefail
LOCAL=10.0.0.12

vrf() {   # NAME: the VRF's namespace, filled once zebra has taken it as a VRF
  ip netns add "$1"
  ip -n "$1" link set lo up
  for _ in $(seq 100); do
    vtysh -c "show vrf" | grep -q "^vrf $1 id .* netns " && return 0   # not just "(configured)"
    sleep 0.1
  done
  echo "leaf2: zebra never took VRF $1" >&2
  exit 1
}

vni() {   # VRF VNI INDEX [GATEWAY/LEN PORT]: a VXLAN device and its bridge (an L2VNI's has an anycast gateway)
  ip link add "vxlan$2" netns "$1" index "$3" type vxlan id "$2" local "$LOCAL" dstport 4789 nolearning
  if [ $# -gt 3 ]; then    # an L2VNI: its bridge has the anycast gateway's MAC and address
    ip -n "$1" link add "br$2" index "$(($3 + 1))" address 00:00:5e:00:01:01 type bridge
  else                     # an L3VNI: its bridge's MAC is the VTEP's router MAC, its own
    ip -n "$1" link add "br$2" index "$(($3 + 1))" type bridge
  fi
  ip -n "$1" link set "vxlan$2" master "br$2"
  bridge -n "$1" link set dev "vxlan$2" learning off
  if [ $# -gt 3 ]; then
    bridge -n "$1" link set dev "vxlan$2" neigh_suppress on
    ip -n "$1" addr add "$4" dev "br$2"
    ip link set "$5" netns "$1"
    ip -n "$1" link set "$5" master "br$2"
    ip -n "$1" link set "$5" up
  fi
  ip -n "$1" link set "vxlan$2" up
  ip -n "$1" link set "br$2" up
}

ip addr add "$LOCAL/32" dev lo       # the loopback: VTEP address and router-id (see frr.conf)
vrf red
vrf blue
vni red 1000 12000
vni red 110 12110 10.1.1.1/24 eth2
vni blue 2000 12200
vni blue 220 12210 10.2.2.1/24 eth3
echo "leaf2: EVPN overlay ready (red: VNI 110, L3VNI 1000; blue: VNI 220, L3VNI 2000)"
