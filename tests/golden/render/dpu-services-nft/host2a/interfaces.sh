#!/bin/sh
# host2a (lab dpusvc): kernel side of the tenant port of this host.
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
ip link set eth1 address 02:cf:00:f9:61:4d
ip addr add 10.1.1.12/24 dev eth1
ip link set eth1 up
ip route add default via 10.1.1.1 dev eth1
