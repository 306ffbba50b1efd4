"""The runtime seam (issue 26): the kernel steps' text and netlink tables cover the same ops,
and library errors become twin's own at the seam."""
from twin.config.steps import OPS
from twin.runtime.steps_apply import APPLY


def test_text_and_apply_tables_cover_the_same_ops():
    over_netlink = {op for op, o in OPS.items() if not o.in_node}
    assert set(APPLY) == over_netlink
    assert {op for op, o in OPS.items() if o.in_node} == {
        "netns", "vlan-bridge", "svd", "vlan", "macvlan", "bridge-vlan", "vlan-tunnel", "fdb-vlan", "nft",
        "nft-delete"}
