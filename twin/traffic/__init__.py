"""Traffic in the lab: captures on node ports (and, later, RoCE flows)."""
