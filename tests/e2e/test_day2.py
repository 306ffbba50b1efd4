"""Day-2 on the default lab: `twin apply` and `twin rehearse`, measured with live RoCE
traffic. One lab for the module; every test leaves it at the default intent again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from twin import verify
from twin.base import wait
from twin.base.errors import ApplyFailed, ChangeRefused, TopologyError
from twin.change.rehearse import Thresholds, rehearse
from twin.cli import main
from twin.runtime import frr, kernel
from twin.traffic import stream as S

pytestmark = pytest.mark.e2e

NAME = "t-day2"
ROOT = Path(__file__).resolve().parents[2]
DEFAULT = ROOT / "topologies/aipod.yml"
HOLD_TIMER = 9.0  # `frr defaults datacenter` (underlay.j2): a black-holed link is found within this


@pytest.fixture(scope="module")
def lab(make_lab):
    lab = make_lab("topologies/aipod.yml", NAME)
    yield lab
    lab.down()


def variant(tmp_path: Path, name: str, edit) -> Path:
    topo = yaml.safe_load(DEFAULT.read_text())
    edit(topo)
    path = tmp_path / f"{name}.yml"
    path.write_text(yaml.safe_dump(topo, sort_keys=False))
    return path


def add_green(topo: dict) -> None:
    """A third tenant with its own workloads behind both DPUs, reusing red's addresses."""
    topo["nodes"].update({"host1d": {"kind": "host"}, "host2d": {"kind": "host"}})
    topo["links"] += [{"endpoints": ["dpu1:pf0vf3", "host1d:eth1"]}, {"endpoints": ["dpu2:pf0vf3", "host2d:eth1"]}]
    topo["tenants"]["green"] = {
        "l3vni": 10300,
        "segments": {"web": {"subnet": "10.1.1.0/24", "l2vni": 10301, "gateway": "10.1.1.1"}},
        "attachments": [
            {"host": "host1d", "segment": "web", "address": "10.1.1.11"},
            {"host": "host2d", "segment": "web", "address": "10.1.1.12"},
        ],
    }


def fingerprint(lab) -> dict:
    """What a refused change must not touch: running FRR configs, kernel links and tenant
    namespaces of every node, and the lab's recorded intent."""
    out = {"fabric": lab.fabric.model_dump_json(), "state": (lab.dir / "fabric.json").read_text()}
    for name, ex in sorted(lab.execs().items()):
        out[name] = ex.run(
            ["sh", "-c", "ip -br link; ip netns; for n in $(ip netns | cut -d' ' -f1); do ip -n $n -br link; done"]
        ).stdout
        if lab.fabric.nodes[name].runs_bgp:
            out[name] += ex.vtysh("show running-config")
    return out


def gone_tenant_traces(ex, vrf: str, l3vni: int) -> list[str]:
    """What a VTEP still holds of a removed tenant: devices in its namespace, FRR config."""
    devices = [line.split()[0].split("@")[0] for line in ex.run(["ip", "-n", vrf, "-br", "link"]).stdout.splitlines()]
    running = ex.vtysh("show running-config").splitlines()
    return [f"device {d}" for d in devices if d != "lo"] + [
        line
        for line in running
        if line.strip() == f"vni {l3vni}" or (line.startswith("router bgp") and line.endswith(f" vrf {vrf}"))
    ]


def assert_whole(lab) -> None:
    assert lab.missing() == []
    report = verify.run(lab, only=["control", "traffic", "isolation"])
    assert report.passed, [f"{c.group}: {c.name}: {c.message}" for c in report.failures()]


@pytest.mark.parametrize("node", ["spine1", "leaf1"])
def test_drain_with_graceful_shutdown_loses_no_roce_packet(lab, tmp_path, node):
    """spine1: aipod's DPU-to-DPU traffic never crosses a spine, verify proves spine1 carries
    none; leaf1 does carry it: the flows move to leaf2 without losing a packet."""
    drained = variant(tmp_path, f"drain-{node}", lambda t: t["nodes"][node].update(drain=True))
    rep = rehearse(lab, str(drained), Thresholds(max_loss=0), rollback=True)
    assert rep.passed, rep.text()
    assert rep.verify.passed and rep.verify_rollback.passed
    assert len(rep.flows) == 12 and all(r.lost == 0 and r.sent > 100 for r in rep.flows), rep.text()
    assert rep.flapped == [], "graceful shutdown keeps every session up"
    assert rep.routes == {}, "tenant routes do not change when a spine drains"
    assert rep.apply["reloaded"] == [node] and rep.apply["restarted"] == []
    underlay = [c for c in rep.verify.checks if c.group == "underlay"]
    assert underlay and all(c.data["packets_per_drained_node"] == {node: 0} for c in underlay), [
        c.data for c in underlay
    ]
    # rolled back: the recorded intent and the running config are undrained again
    assert not lab.fabric.nodes[node].drain
    assert "graceful-shutdown" not in lab.node(node).vtysh("show running-config")


def test_paths_via_a_drained_spine_lose_everywhere(lab, tmp_path):
    """Graceful shutdown as BGP sees it: spine1's sessions stay up, its paths carry the
    GRACEFUL_SHUTDOWN community, LOCAL_PREF 0, and are neither best nor multipath."""
    res = lab.apply(variant(tmp_path, "drain-spine1", lambda t: t["nodes"]["spine1"].update(drain=True)))
    assert res.converged and lab.fabric.drained() == ["spine1"]
    assert " bgp graceful-shutdown\n" in lab.node("spine1").vtysh("show running-config"), "FRR runs the drain"
    spine1_lo = lab.fabric.nodes["spine1"].loopback + "/32"
    dpus = {lab.fabric.nodes[n].loopback + "/32" for n in ("dpu1", "dpu2")}

    def paths_via_spine1() -> dict:
        found = {}
        for leaf in ("leaf1", "leaf2"):
            (doc,) = lab.node(leaf).vtysh_json("show bgp ipv4 unicast json")
            for prefix, paths in doc["routes"].items():
                if prefix == spine1_lo:
                    continue  # spine1's own loopback: every path to it is drained, so it still wins
                via = [p for p in paths if {h.get("hostname") for h in p.get("nexthops", [])} == {"spine1"}]
                if via:  # the last such path, as before
                    found[(leaf, prefix)] = via[-1]
        return found

    def still_preferred() -> list[str]:  # the drain reaches the leafs in an UPDATE, just after the reload
        return [
            f"{leaf} {prefix} via spine1: {p}"
            for (leaf, prefix), p in paths_via_spine1().items()
            if p.get("locPrf") != 0 or p.get("bestpath") or p.get("multipath")
        ]

    wait.until(still_preferred, 10, "paths via spine1 losing everywhere")
    via = paths_via_spine1()
    assert via, "spine1 still advertises: its sessions are up"
    # a DPU loopback (the VTEPs' next hop) learned via spine1: on whichever leaf spine1 did not learn it from
    assert {prefix for _, prefix in via} & dpus
    # leaf1 -> leaf2 crosses the spines: only spine2 (and the DPUs) are left in the multipath
    (doc,) = lab.node("leaf1").vtysh_json(f"show bgp ipv4 unicast {lab.fabric.nodes['leaf2'].loopback}/32 json")
    by_peer = {p["peer"]["hostname"]: p for p in doc["paths"]}
    assert by_peer["spine1"]["community"]["list"] == ["gracefulShutdown"] and by_peer["spine1"]["locPrf"] == 0
    assert {h for h, p in by_peer.items() if p.get("bestpath") or p.get("multipath")} == {"spine2", "dpu1", "dpu2"}
    res = lab.apply(DEFAULT)
    assert res.converged and res.reloaded == ["spine1"] and lab.fabric.drained() == []


def test_blackholed_dpu_uplink_loses_traffic_then_reconverges_within_the_hold_time(lab):
    rep = rehearse(
        lab, "fault:link-loss:dpu1:p0:100", Thresholds(max_loss=None, max_reconverge=HOLD_TIMER + 3), rollback=True
    )
    assert rep.passed, rep.text()
    lossy = [r for r in rep.flows if r.lost]
    # flows hashed onto the black hole lose everything until BGP's hold timer drops the session
    assert lossy and all(r.src.startswith("host1") or r.dst.startswith("host1") for r in lossy), rep.text()
    worst = max(r.longest_outage_s for r in rep.flows)
    assert HOLD_TIMER - 3 < worst <= HOLD_TIMER + 2, rep.text()
    assert 0 < rep.timings["data_plane_whole"] <= HOLD_TIMER + 3
    assert any(f.startswith("dpu1 p0:") for f in rep.flapped) and any(f.startswith("leaf1 swp3:") for f in rep.flapped)
    assert rep.verify.passed, "traffic and isolation hold on the remaining uplink"
    assert rep.verify_rollback.passed
    # the change window's events: the fault, the loss rule's drops on dpu1:p0 with their reason, carrier
    # up all along (a black hole, not a cut)
    kinds = {e["kind"] for e in rep.events}
    assert {"action", "drop"} <= kinds, rep.text()
    drops = [e for e in rep.events if e["kind"] in ("drop", "drop-burst")]
    assert {(e["node"], e["port"], e["reason"]) for e in drops} == {
        ("dpu1", "p0", "fault: 100% random loss on this port")
    }
    assert not [e for e in rep.events if e["kind"] == "carrier" and e["node"] == "dpu1"]
    assert any(e["text"] == "fault link-loss dpu1:p0 100" for e in rep.events)
    assert "events in the change window" in rep.text() and rep.to_dict()["events"]
    # the same run, judged strictly: the loss fails it
    strict = Thresholds(max_loss=0)
    rep.thresholds = strict
    assert not rep.passed and any(c.startswith("loss per flow") and not ok for c, ok, _ in rep.verdicts())


def test_add_a_tenant_live_leaves_the_others_untouched_and_remove_it_again(lab, tmp_path):
    green = variant(tmp_path, "green", add_green)
    p = lab.plan(green)
    assert "add tenant green (l3vni 10300, VTEPs dpu1, dpu2)" in p.changes
    assert p.frr == {"dpu1": "reload", "dpu2": "reload"}
    assert "ip netns add green" in p.kernel["dpu1"]
    rep = rehearse(lab, str(green), Thresholds(max_loss=0))
    assert rep.passed, rep.text()
    assert all(r.lost == 0 for r in rep.flows), "red and blue flows run on, not a packet lost"
    assert rep.flapped == []
    assert set(rep.routes) == {"green"}, f"only green's routes change: {rep.routes}"
    assert rep.apply["restarted"] == [], "FRR reloaded, never restarted"
    assert set(lab.fabric.tenants) == {"red", "blue", "green"}
    assert json.loads((lab.dir / "fabric.json").read_text())["tenants"]["green"]["l3vni"] == 10300
    assert lab.state.history[-1]["changes"][-1].startswith("add tenant green")
    # green works as any tenant, with red's very addresses, and stays apart from them
    report = verify.run(lab, only=["control", "traffic", "isolation"])
    assert report.passed, [f"{c.name}: {c.message}" for c in report.failures()]
    # and goes again, live, leaving red and blue untouched once more
    old_pairs = [p for p in S.pairs(lab.fabric) if not {"host1d", "host2d"} & set(p)]
    with S.Stream(lab, S.pair_flows(lab.fabric, old_pairs)) as s:
        s.hold(0.5)
        res = lab.apply(DEFAULT)
        s.hold(1.0)
    assert res.converged and "remove tenant green" in res.changes
    assert all(r.lost == 0 for r in s.results), [(r.src, r.dst, r.lost) for r in s.results if r.lost]
    for dpu in ("dpu1", "dpu2"):  # green's devices and FRR config are gone; its namespace stays, empty
        assert not gone_tenant_traces(lab.node(dpu), "green", 10300)
    assert "host1d" not in lab.runtime.containers(NAME)
    assert_whole(lab)


def test_bad_changes_are_refused_and_leave_the_lab_exactly_as_it_was(lab, tmp_path):
    before = fingerprint(lab)
    # an invalid file: every problem, with its place
    bad = variant(tmp_path, "bad", lambda t: t["tenants"]["red"]["segments"]["web"].update(gateway="10.9.9.9"))
    with pytest.raises(TopologyError, match=r"bad.yml:\d+: tenants.red.segments.web.gateway"):
        lab.apply(bad)

    # a router that does not exist yet: apply does not re-create nodes
    def leaf3(t):
        t["nodes"]["leaf3"] = {"kind": "leaf"}
        t["links"].append({"endpoints": ["spine1:swp9", "leaf3:swp1"]})

    extra = variant(tmp_path, "leaf3", leaf3)
    with pytest.raises(ChangeRefused, match="add node leaf3 \\(leaf\\): apply does not re-create nodes"):
        lab.apply(extra)
    # a directory of configs for a node that does not exist, and a config FRR rejects
    configs = tmp_path / "configs"
    (configs / "leaf9").mkdir(parents=True)
    (configs / "leaf9" / "frr.conf").write_text("hostname leaf9\n")
    with pytest.raises(TopologyError, match="no FRR node 'leaf9' in lab 't-day2'"):
        lab.apply(configs)
    (configs / "leaf9" / "frr.conf").unlink()
    (configs / "leaf9").rmdir()
    good = (lab.dir / "leaf1" / "frr.conf").read_text()
    (configs / "leaf1.conf").write_text(
        good.replace(
            " bgp bestpath as-path multipath-relax\n",
            " bgp bestpath as-path multipath-relax\n neighbor fabric bogus-knob 7\n",
        )
    )
    res = CliRunner().invoke(main, ["apply", NAME, str(configs)])
    assert res.exit_code == 1
    assert "refused" in res.output and "leaf1: FRR rejects the new config" in res.output and "bogus-knob" in res.output
    assert fingerprint(lab) == before


def test_a_change_that_fails_half_way_is_rolled_back(lab, tmp_path, monkeypatch):
    before = fingerprint(lab)
    green = variant(tmp_path, "green", add_green)
    real = kernel.apply
    calls = {"n": 0}

    def flaky(steps, pid, ex, tolerant=False):  # the second VTEP's kernel change fails
        if not tolerant and any(s.op == "vxlan" for s in steps):
            calls["n"] += 1
            if calls["n"] == 2:
                raise kernel.TwinError(f"{ex.where}: injected failure")
        return real(steps, pid, ex, tolerant)

    monkeypatch.setattr(kernel, "apply", flaky)  # the runtime's own callers (FRR's live steps)
    monkeypatch.setattr("twin.change.apply.apply_steps", flaky)  # and the change's, through the runtime's face
    with pytest.raises(
        ApplyFailed,
        match="(?s)failed half way and was rolled back.*injected failure.*"
        "rollback: done: the lab runs its previous intent again",
    ):
        lab.apply(green)
    monkeypatch.undo()
    assert "host1d" not in lab.runtime.containers(NAME)
    assert set(lab.fabric.tenants) == {"red", "blue"}
    after = fingerprint(lab)
    for node in ("dpu1", "dpu2"):  # no trace of green in the kernel or in FRR (but its empty namespace)
        assert not gone_tenant_traces(lab.node(node), "green", 10300), after[node]
    assert after["fabric"] == before["fabric"]
    assert_whole(lab)


def rulesets(lab) -> dict[str, str]:
    """The rules each VTEP runs, per tenant namespace: its tables in name order (a table loaded
    again, as a rollback loads the ports table, is listed after the others; the order means nothing)."""

    def tables(text: str) -> list[str]:
        return sorted("table " + t.rstrip() for t in ("\n" + text).split("\ntable ")[1:])

    return {
        f"{v}/{t.vrf}": "\n".join(
            tables(lab.node(v).check(["ip", "netns", "exec", t.vrf, "nft", "-s", "list", "ruleset"]).stdout)
        )
        for v in lab.fabric.vteps()
        for t in lab.fabric.tenants_on(v)
    }


def add_red_host(topo: dict) -> None:
    """A new red workload on dpu1: red's zero-trust rules on dpu1 change (nft -f in stage 5)."""
    topo["nodes"]["host1d"] = {"kind": "host"}
    topo["links"].append({"endpoints": ["dpu1:pf0vf3", "host1d:eth1"]})
    topo["tenants"]["red"]["attachments"].append({"host": "host1d", "segment": "web", "address": "10.1.1.13"})


def test_rollback_restores_the_old_files_before_the_kernel_steps_that_read_them(lab, tmp_path, monkeypatch):
    """A failure after the new nftables rules were loaded: the rollback must load the old rules,
    which it can only do if the old files are back first (it used to reload the new ones)."""
    before = rulesets(lab)
    real = kernel.apply

    def failing(steps, pid, ex, tolerant=False):  # the new workload's binding (stage 7) fails
        if not tolerant and any(s.op == "neigh" for s in steps):
            raise kernel.TwinError(f"{ex.where}: injected binding failure")
        return real(steps, pid, ex, tolerant)

    monkeypatch.setattr(kernel, "apply", failing)
    monkeypatch.setattr("twin.change.apply.apply_steps", failing)  # the change's, through the runtime's face
    with pytest.raises(ApplyFailed, match="(?s)rolled back.*stage bindings.*injected binding failure.*rollback: done"):
        lab.apply(variant(tmp_path, "red-host", add_red_host))
    monkeypatch.undo()
    assert "host1d" not in lab.runtime.containers(NAME)
    after = rulesets(lab)
    assert "host1d" not in after["dpu1/red"], "the new host's rules are gone from dpu1"
    assert after == before
    assert "host1d" not in (lab.dir / "dpu1" / "nftables-red.nft").read_text()
    assert_whole(lab)


def test_a_rollback_that_cannot_restore_everything_says_what_and_fails(lab, tmp_path, monkeypatch):
    real = frr.take

    def broken(ex, restart=False, **kw):  # dpu2's FRR takes no config at all, forward or back
        if ex.where.endswith("/dpu2"):
            raise kernel.TwinError(f"{ex.where}: FRR unreachable (injected)")
        return real(ex, restart, **kw)

    monkeypatch.setattr("twin.change.apply.frr_take", broken)  # what the change calls (the runtime's face)
    with pytest.raises(ApplyFailed) as e:
        lab.apply(variant(tmp_path, "green", add_green))
    monkeypatch.undo()
    assert not e.value.rolled_back and "rollback: INCOMPLETE" in str(e.value), str(e.value)
    assert any("dpu2" in p and "FRR unreachable" in p for p in e.value.problems), e.value.problems
    assert "done" not in str(e.value).split("rollback:")[1]
    res = runner_apply(DEFAULT)  # the way back a user takes: the topology they had
    assert res.exit_code == 0, res.output
    assert_whole(lab)


def runner_apply(topology) -> object:
    return CliRunner().invoke(main, ["apply", NAME, str(topology)])


def test_user_configs_go_through_frr_reload_and_record_as_the_nodes_config(lab, tmp_path):
    configs = tmp_path / "from-my-automation"
    (configs / "leaf2").mkdir(parents=True)
    text = (
        (lab.dir / "leaf2" / "frr.conf")
        .read_text()
        .replace(
            " bgp bestpath as-path multipath-relax\n",
            " bgp bestpath as-path multipath-relax\n bgp log-neighbor-changes\n",
        )
    )
    (configs / "leaf2" / "frr.conf").write_text(text)
    p = lab.plan(configs)
    assert "+ bgp log-neighbor-changes" in p.diffs["leaf2"]["frr.conf"] and p.frr == {"leaf2": "reload"}
    res = lab.apply(configs)
    assert res.converged and res.reloaded == ["leaf2"] and res.restarted == []
    assert (lab.dir / "leaf2" / "frr.conf").read_text() == text
    # back to the topology's own config: the declarative intent re-renders it
    res = lab.apply(DEFAULT)
    assert res.reloaded == ["leaf2"] and "log-neighbor-changes" not in (lab.dir / "leaf2" / "frr.conf").read_text()


def test_a_change_of_a_nodes_daemons_boots_its_frr_again_in_order_and_back(lab, tmp_path):
    """A config whose `daemons` differ (ospfd on) restarts that node's FRR: in twin's node image by its own
    boot in order (`twin-nodectl reboot`: a new boot, watched until up), not FRR's init script; the way
    back (the topology's own configs) restarts it again. The lab converges each time."""
    configs = tmp_path / "daemons-changed"
    (configs / "leaf2").mkdir(parents=True)
    (configs / "leaf2" / "frr.conf").write_text((lab.dir / "leaf2" / "frr.conf").read_text())
    daemons = (lab.dir / "leaf2" / "daemons").read_text()
    assert "ospfd=no" in daemons
    (configs / "leaf2" / "daemons").write_text(daemons.replace("ospfd=no", "ospfd=yes"))
    boot = lab.node("leaf2").run(["cat", "/run/twin/frr-boot"]).stdout.split()
    assert lab.plan(configs).frr == {"leaf2": "restart (daemons changed)"}
    res = lab.apply(configs)
    assert res.converged and res.restarted == ["leaf2"] and res.reloaded == [], res
    after = lab.node("leaf2").run(["cat", "/run/twin/frr-boot"]).stdout.split()
    assert int(after[0]) > int(boot[0]) and after[1] == "up", (boot, after)
    assert lab.node("leaf2").run(["pidof", "ospfd"]).ok
    res = lab.apply(DEFAULT)
    assert res.converged and res.restarted == ["leaf2"], res
    assert not lab.node("leaf2").run(["pidof", "ospfd"]).ok
    assert_whole(lab)


def test_segment_attachment_link_and_mtu_changes_apply_and_revert(lab):
    """The golden day-1 change: a tenant added, blue's db segment gone from dpu2 with its only
    host (host2c detached, its link removed), an uplink's MTU raised; then all of it undone."""
    res = lab.apply(ROOT / "tests/golden/plan/aipod-day1.yml")
    assert res.converged, res.missing
    dpu2 = lab.node("dpu2")
    assert "vxlan10202" not in dpu2.check(["ip", "-n", "blue", "-br", "link"]).stdout
    assert "pf0vf2" not in dpu2.check(["ip", "-br", "link"]).stdout, "the link to host2c is gone"
    assert "mtu 9100" in lab.node("dpu1").check(["ip", "link", "show", "p0"]).stdout
    assert "mtu 9100" in lab.node("leaf1").check(["ip", "link", "show", "swp3"]).stdout
    assert "10.1.2.12" not in lab.node("host2c").check(["ip", "-br", "addr"]).stdout
    report = verify.run(lab, only=["control", "traffic", "isolation"])
    assert report.passed, [f"{c.name}: {c.message}" for c in report.failures()]
    res = lab.apply(DEFAULT)
    assert res.converged, res.missing
    assert "mtu 9000" in lab.node("dpu1").check(["ip", "link", "show", "p0"]).stdout
    assert "10.1.2.12/24" in lab.node("host2c").check(["ip", "-br", "addr"]).stdout
    assert_whole(lab)
