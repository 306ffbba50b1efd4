"""NVUE's LLDP (issue 44): Cumulus Linux 5.9's `service lldp` and `interface X lldp` places (the timers
run by the node's lldpd, the TLVs and CDP's mode stored, 5.11's `state` refused), the lldpcli step of
the node's plane and its undo, no value becoming a foreign lldpcli command, lldpd's json0 read, and the
`lldp` verify group's judgement of what a port sees."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from twin import nvue, topology
from twin.base.errors import CommandError, TopologyError
from twin.nvue import hostname as nvue_hostname
from twin.nvue import lldp, lldpcheck
from twin.nvue import tree as nv_tree
from twin.nvue.lldpcheck import End
from twin.nvue.nvued import show, showlldp
from twin.nvue.plane import extras_delta
from twin.runtime import LldpNeighbor, Result, parse_lldpd, read_lldpd

ROOT = Path(__file__).resolve().parents[2]
FABRIC = topology.load(ROOT / "tests/e2e/nvue/samples.yml")
POLICY = topology.load(ROOT / "tests/e2e/nvue/policy.yml")
LEAF = nvue.read(ROOT / "tests/golden/interop/nvue/samples/leaf01/startup.yaml").tree
GOLDEN = ROOT / "tests/golden/lldp"
NAME = r"[A-Za-z0-9][A-Za-z0-9.-]*"
HOSTNAME_STEP = re.compile(
    rf"hostname (?P<n>{NAME}) && printf '%s\\n' (?P=n) > /etc/hostname && "
    rf"\{{ grep -q '\[\[:space:\]\](?P=n)\$' /etc/hosts \|\| printf '127\.0\.1\.1\\t%s\\n' (?P=n) >> /etc/hosts; \}}"
)
FUZZ = settings(
    derandomize=True, database=None, deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow]
)
STEP = re.compile(
    r"lldpcli (configure system hostname [A-Za-z0-9][A-Za-z0-9.-]*|unconfigure system hostname) "
    r"&& lldpcli configure lldp tx-hold (10|[1-9]) && lldpcli configure lldp tx-interval ([1-9][0-9]{0,2})"
)


def leaf(edit: dict) -> nvue.NvueFile:
    t = copy.deepcopy(LEAF)
    nv_tree.patch(t, edit)
    return nvue.from_tree(t, "leaf01/startup.yaml")


def built(edit: dict) -> Any:
    return nvue.build({"leaf01": leaf(edit)}, FABRIC, "netns")[0]["leaf01"]


def refusals(edit: dict) -> list[str]:
    with pytest.raises(TopologyError) as e:
        leaf(edit)
    return [f"{p.path}: {p.message}" for p in e.value.problems]


# --- the places -------------------------------------------------------------------------------------------
def test_cumulus_59s_lldp_places_run_the_timers_and_store_the_rest():
    nf = leaf(
        {
            "service": {
                "lldp": {
                    "tx-interval": 30,
                    "tx-hold-multiplier": 3,
                    "dot1-tlv": "on",
                    "lldp-med-inventory-tlv": "off",
                    "mode": "force-send-cdpv2",
                    "application-tlv": {"app": {"iSCSI": {"priority": 3}}, "tcp-port": {"4420": {"priority": 5}}},
                },
                "ntp": {"mgmt": {}},
            },
            "interface": {
                "swp51": {
                    "lldp": {
                        "dcbx-pfc-tlv": "on",
                        "dcbx-ets-config-tlv": "off",
                        "dcbx-ets-recomm-tlv": "on",
                        "application-tlv": {"app": {"iSCSI": {}}, "udp-port": {"4317": {}}},
                    }
                }
            },
        }
    )
    assert sorted(nv_tree.show(p) for p in nf.not_emulated) == [
        "interface.swp51.lldp.application-tlv.app.iSCSI",
        "interface.swp51.lldp.application-tlv.udp-port.4317",
        "interface.swp51.lldp.dcbx-ets-config-tlv",
        "interface.swp51.lldp.dcbx-ets-recomm-tlv",
        "interface.swp51.lldp.dcbx-pfc-tlv",
        "service.lldp.application-tlv.app.iSCSI.priority",
        "service.lldp.application-tlv.tcp-port.4420.priority",
        "service.lldp.dot1-tlv",
        "service.lldp.lldp-med-inventory-tlv",
        "service.lldp.mode",
        "service.ntp",
    ]
    assert lldp.of(nf.tree, "leaf01") == lldp.Lldp(30, 3, None)


@pytest.mark.parametrize(
    "edit, why",
    [
        ({"tx-interval": 5}, "service.lldp.tx-interval: 5 is not an LLDP transmit interval of 10-300 seconds"),
        ({"tx-interval": 301}, "service.lldp.tx-interval: 301 is not an LLDP transmit interval of 10-300 seconds"),
        ({"tx-hold-multiplier": 0}, "service.lldp.tx-hold-multiplier: 0 is not an LLDP hold multiplier of 1-10"),
        ({"tx-hold-multiplier": 11}, "service.lldp.tx-hold-multiplier: 11 is not an LLDP hold multiplier of 1-10"),
        ({"mode": "cdp"}, "service.lldp.mode: 'cdp' is not one of default, force-send-cdpv1, force-send-cdpv2, "),
        ({"application-tlv": {"app": {"iSCSI": {"priority": 8}}}}, "is not an application priority (0-7)"),
        ({"state": "disabled"}, "service.lldp.state: no such key in NVUE's service.lldp; keys: application-tlv, "),
    ],
)
def test_values_nvue_refuses_are_refused(edit, why):
    assert any(why in r for r in refusals({"service": {"lldp": edit}})), refusals({"service": {"lldp": edit}})


def test_a_ports_lldp_state_is_cumulus_511s_and_refused_as_59_does():
    (why,) = refusals({"interface": {"swp51": {"lldp": {"state": "disabled"}}}})
    assert why == (
        "interface.swp51.lldp.state: no such key in NVUE's interface.swp51.lldp; keys: application-tlv, "
        "dcbx-ets-config-tlv, dcbx-ets-recomm-tlv, dcbx-pfc-tlv"
    )
    with pytest.raises(ValueError, match="interface.swp51.lldp.state: no such place"):
        nv_tree.words(["interface", "swp51", "lldp", "state", "disabled"])


def test_nv_set_words_reach_the_lldp_places():
    assert nv_tree.words(["service", "lldp", "tx-interval", "100"]) == (("service", "lldp", "tx-interval"), "100")
    assert nv_tree.words(["interface", "swp1", "lldp", "dcbx-pfc-tlv", "on"])[0][-1] == "dcbx-pfc-tlv"


def test_nv_show_knows_a_ports_lldp_neighbors_which_the_configuration_has_not():
    assert show.known(("interface", "swp51", "lldp", "neighbor", "spine01", "port")) == ""
    assert show.known(("interface", "swp51", "lldp")) == ""
    assert "no such place" in show.known(("interface", "swp51", "lldp", "frob"))
    assert show.operational(("service", "lldp", "tx-interval")) == (("service", "lldp"), ("tx-interval",))


# --- the node's plane: its lldpcli step -------------------------------------------------------------------
def test_the_timers_and_a_host_name_of_its_own_are_one_lldpcli_step_last():
    x = built({"service": {"lldp": {"tx-interval": 30, "tx-hold-multiplier": 3}}, "system": {"hostname": "leaf-01"}})
    line = (
        "lldpcli configure system hostname leaf-01 && lldpcli configure lldp tx-hold 3 "
        "&& lldpcli configure lldp tx-interval 30"
    )
    assert x.plane.steps[-1].command() == line and x.plane.extras[lldp.KEY] == x.plane.steps[-1]
    assert line in x.files["interfaces.sh"]
    assert x.plane.steps[-1].in_node


def test_a_node_whose_nvue_sets_no_lldp_keeps_its_lldpds_own_and_gets_no_step():
    x = built({"service": {"lldp": {"dot1-tlv": "on"}}, "system": {"hostname": "leaf01"}})  # its own name
    assert lldp.KEY not in x.plane.extras and "lldpcli" not in x.files["interfaces.sh"]
    assert built({}).files["interfaces.sh"] == x.files["interfaces.sh"]


def test_lldpd_starts_with_the_interval_the_module_says():
    conf = (ROOT / "twin/images/node/lldpd.conf").read_text()
    assert f"configure lldp tx-interval {lldp.TX_INTERVAL}\n" in conf and "tx-hold" not in conf  # lldpd's own 4


def test_day_two_sets_the_step_anew_and_its_removal_puts_lldpds_own_back():
    none, some = built({}).plane, built({"service": {"lldp": {"tx-interval": 60}}}).plane
    other = built({"service": {"lldp": {"tx-interval": 60}}, "system": {"hostname": "x1"}}).plane
    add, remove = extras_delta(none.extras, some.extras, set(), set())
    assert [s.command() for s in add] == [
        "lldpcli unconfigure system hostname && lldpcli configure lldp tx-hold 4 && lldpcli configure lldp "
        "tx-interval 60"
    ] and remove == []
    add, remove = extras_delta(some.extras, none.extras, set(), set())
    assert add == [] and [s.command() for s in remove] == [lldp.DEFAULT.step().command()]
    assert lldp.DEFAULT.step().command().endswith("tx-hold 4 && lldpcli configure lldp tx-interval 5")
    add, remove = extras_delta(other.extras, some.extras, set(), set())  # its host name gone: lldpd's own again
    assert [s.command().split(" && ")[0] for s in add] == ["lldpcli unconfigure system hostname"]
    assert [s.command().split(" && ")[0] for s in remove] == ["hostname leaf01"], "the node's own name again"


NASTY = ["x\nconfigure lldp status disabled", "a b", "a;b", "$(id)", "`id`", "-h", "x" * 70, "", "1", "\x00", "é"]


@FUZZ
@given(
    st.sampled_from(("tx-interval", "tx-hold-multiplier", "hostname")),
    st.sampled_from(NASTY)
    | st.text(max_size=30)
    | st.integers(-5, 2**33)
    | st.integers(0, 320)
    | st.from_regex(r"[a-z0-9][a-z0-9.-]{0,20}", fullmatch=True),
)
def test_no_value_becomes_a_foreign_lldpcli_command(key: str, value: Any):
    edit = {"system": {"hostname": value}} if key == "hostname" else {"service": {"lldp": {key: value}}}
    try:
        x = built(edit)
    except TopologyError as e:
        assert any(key in p.path for p in e.problems), (key, value, [str(p) for p in e.problems])
        return
    step = x.plane.extras.get(lldp.KEY)
    assert step is None or STEP.fullmatch(step.command()), (key, value, step)
    named = x.plane.extras.get(nvue_hostname.KEY)
    assert named is None or HOSTNAME_STEP.fullmatch(named.command()), (key, value, named)


# --- lldpd's JSON -----------------------------------------------------------------------------------------
class FakeExec:
    where = "t/spine1"

    def __init__(self, out: str) -> None:
        self.out = out

    def check(self, cmd: list[str], timeout: float = 0) -> Result:
        return Result(self.where, cmd, 0, self.out, "")


class FakeCtx:
    def exec(self, node: str) -> FakeExec:
        return FakeExec((GOLDEN / "spine1.json0").read_text())


def test_nv_show_service_lldp_shows_what_nvue_stores_beside_what_lldpd_runs():
    applied = {"tx-interval": 5, "dot1-tlv": True, "mode": "force-send-cdpv1", "lldp-med-inventory-tlv": False}
    assert showlldp.service_shown(FakeCtx(), "spine1", applied) == {  # type: ignore[arg-type]
        "tx-interval": 5,  # lldpd's
        "tx-hold-multiplier": 4,
        "dot1-tlv": "on",  # applied, not run: NVUE's words
        "lldp-med-inventory-tlv": "off",
        "mode": "force-send-cdpv1",
        "twin": {"system-name": "spine1", "ttl": 20, "stored": ["dot1-tlv", "lldp-med-inventory-tlv", "mode"]},
    }
    assert showlldp.service_shown(FakeCtx(), "spine1", {}) == {  # type: ignore[arg-type]
        "tx-interval": 5,
        "tx-hold-multiplier": 4,
        "twin": {"system-name": "spine1", "ttl": 20},
    }


def test_lldpds_json0_reads_as_its_timers_name_and_neighbors_per_port():
    d = read_lldpd(FakeExec((GOLDEN / "spine1.json0").read_text()))  # type: ignore[arg-type]
    assert (d.tx_interval, d.tx_hold, d.system_name) == (5, 4, "spine1")
    (n,) = d.neighbors["swp1"]
    assert (n.name, n.port, n.port_type, n.ttl, n.mgmt[0], n.via) == (
        "leaf1",
        "swp51",
        "ifname",
        20,
        "10.255.0.2",
        "LLDP",
    )
    assert sorted(d.neighbors) == ["swp1", "swp2"]


def test_lldpd_seeing_nobody_and_output_that_is_not_its_json():
    config, chassis = (GOLDEN / "spine1.json0").read_text().split("\n}\n")[:2]
    nobody = parse_lldpd(json.loads(config + "\n}"), json.loads(chassis + "\n}"), {"lldp": [{}]})
    assert nobody.neighbors == {}
    with pytest.raises(CommandError, match="not lldpd's JSON"):
        read_lldpd(FakeExec("unable to connect to socket /run/lldpd.socket"))  # type: ignore[arg-type]


# --- the lldp group's judgement ---------------------------------------------------------------------------
def seen(name: str, port: str, ttl: int = 20) -> LldpNeighbor:
    return LldpNeighbor(name, port, "ifname", ttl)


def verdict(e: End, ns: list[LldpNeighbor]) -> tuple[bool, str]:
    c = lldpcheck.judge(e, ns)
    return c.passed, c.message


def test_a_port_sees_the_far_end_as_cabled_held_as_its_nvue_declares():
    e = End("spine1", "swp1", "leaf1", "swp51", lldp.Lldp(10, 3), True)
    assert verdict(e, [seen("leaf1", "swp51", 30)]) == (True, "sees leaf1 swp51 (TTL 30 s)")
    assert verdict(e, [seen("leaf1", "swp51", 20)]) == (
        False,
        "sees leaf1 swp51 held for 20 s, not 30 s: leaf1's NVUE declares tx-interval 10 x tx-hold-multiplier 3",
    )
    assert verdict(e, []) == (False, "sees no LLDP neighbour; the topology cables leaf1 swp51 there")


def test_a_host_name_copied_from_another_switch_is_named():
    e = End("spine1", "swp2", "leaf2", "swp51", lldp.Lldp(system_name="leaf1"), True, taken=frozenset({"leaf1"}))
    assert verdict(e, [seen("leaf1", "swp51")]) == (
        False,
        "sees leaf1 swp51, not leaf2 swp51 as the topology cables it (leaf2 sends its NVUE system.hostname leaf1)",
    )


def test_a_switch_its_nvue_renames_is_seen_by_that_name_too():
    e = End("spine1", "swp2", "leaf2", "swp51", lldp.Lldp(system_name="leaf2-sw"), True, taken=frozenset({"leaf1"}))
    assert verdict(e, [seen("leaf2-sw", "swp51")]) == (
        True,
        "sees leaf2-sw swp51, leaf2's NVUE system.hostname (TTL 20 s)",
    )
    assert verdict(e, [seen("leaf2", "swp51")]) == (True, "sees leaf2 swp51 (TTL 20 s)")  # lldpd not told yet
    texts, _ = nvue.export(POLICY)
    trees = {n: nvue.read(f"{n}/startup.yaml", t).tree for n, t in texts.items()}
    trees["leaf2"]["system"]["hostname"] = "leaf1"  # copied from leaf1
    runs = nvue.build({n: nvue.from_tree(t, f"{n}/startup.yaml") for n, t in trees.items()}, POLICY, "netns")[0]
    (far,) = [x for x in lldpcheck.ends(POLICY, runs, "netns") if x.name == "spine1 swp2"]
    assert far.names == {"leaf2"} and "leaf1" in far.taken, "another node's name is not leaf2's"


def test_a_port_set_down_is_named_at_both_ends():
    near = End("leaf1", "swp51", "spine1", "swp1", lldp.DEFAULT, False, down=True)
    far = End("spine1", "swp1", "leaf1", "swp51", lldp.DEFAULT, True, peer_down=True)
    assert verdict(near, []) == (
        False,
        "down (its NVUE sets interface swp51 link state down): LLDP neither sends nor listens there; the topology "
        "cables spine1 swp1 there",
    )
    assert verdict(far, []) == (
        False,
        "sees no LLDP neighbour; the topology cables leaf1 swp51 there (leaf1's NVUE sets swp51 link state down)",
    )


def test_the_judged_ends_are_the_links_of_nvue_nodes_whose_ports_lldpd_sees():
    texts, _ = nvue.export(POLICY)
    trees = {n: nvue.read(f"{n}/startup.yaml", t).tree for n, t in texts.items()}
    trees["leaf1"]["interface"]["swp51"]["link"] = {"state": "down"}
    del trees["leaf2"]  # leaf2 runs twin's rendering
    runs = nvue.build({n: nvue.from_tree(t, n) for n, t in trees.items()}, POLICY, "netns")[0]
    got = {
        (e.name, f"{e.peer} {e.peer_port}", e.nvue, e.down, e.peer_down) for e in lldpcheck.ends(POLICY, runs, "netns")
    }
    assert got == {
        ("leaf1 swp51", "spine1 swp1", True, True, False),
        ("spine1 swp1", "leaf1 swp51", True, False, True),
        ("leaf2 swp51", "spine1 swp2", True, False, False),
        ("spine1 swp2", "leaf2 swp51", False, False, False),
    }  # the hosts' links: hosts run no lldpd, and leaf1's host ports are in their tenants' namespaces


def test_the_proof_replaces_each_nvue_nodes_system_name_and_the_far_ends_name_it():
    texts, _ = nvue.export(POLICY)
    trees = {n: nvue.read(f"{n}/startup.yaml", t).tree for n, t in texts.items()}
    trees["leaf2"]["service"] = {"lldp": {"tx-interval": 30}}
    runs = nvue.build({n: nvue.from_tree(t, n) for n, t in trees.items()}, POLICY, "netns")[0]
    by = {e.id: e for e in lldpcheck.elements(POLICY, runs, "netns")}
    assert sorted(by) == ["lldp leaf1", "lldp leaf2", "lldp spine1"]
    leaf2 = by["lldp leaf2"]
    assert leaf2.how == (
        "lldpcli configure system hostname twin-proof && lldpcli configure lldp tx-hold 4 "
        "&& lldpcli configure lldp tx-interval 30"
    )
    assert leaf2.restored_by.startswith("lldpcli unconfigure system hostname && ") and leaf2.restored_by.endswith(" 30")
    assert leaf2.names("lldp: spine1 swp2: sees twin-proof swp51, not leaf2 swp51 as the topology cables it")
    assert not leaf2.names("lldp: spine1 swp1: sees twin-proof swp51, not leaf1 swp51 as the topology cables it")
    assert by["lldp spine1"].names("lldp: leaf1 swp51: sees twin-proof swp1, not spine1 swp1 as the topology cables it")
