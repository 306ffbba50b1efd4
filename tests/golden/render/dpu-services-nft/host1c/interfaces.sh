#!/bin/sh
# host1c (lab dpusvc): kernel side of the tenant port of this host.
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
ip link set eth1 address 02:53:37:ed:58:9b
ip addr add 10.1.2.11/24 dev eth1
ip link set eth1 up
ip route add default via 10.1.2.1 dev eth1
