#!/bin/sh
# leaf1 (lab dpusvc): kernel side of the services of this node.
# twin applies these very steps over netlink once the node is wired (before FRR starts);
# this file is for reading, and for running by hand on a node that lost them.
set -e
nft -f /etc/twin/congestion.nft
