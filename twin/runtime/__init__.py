"""Everything that touches Docker or netlink. The pure pipeline never imports this."""
