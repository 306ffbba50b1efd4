#!/bin/sh
# host2b (lab dpusvc): kernel side of the tenant port of this host.
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
ip link set eth1 address 02:56:fc:95:08:05
ip addr add 10.1.1.12/24 dev eth1
ip link set eth1 up
ip route add default via 10.1.1.1 dev eth1
