#!/bin/sh
# host1b (lab dpusvc): kernel side of the tenant port of this host.
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
ip link set eth1 address 02:b4:e9:cc:26:f5
ip addr add 10.1.1.11/24 dev eth1
ip link set eth1 up
ip route add default via 10.1.1.1 dev eth1
