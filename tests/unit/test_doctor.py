"""`twin doctor` (issue 27): its answers for every fact, with the facts faked (the e2e test
runs it on this machine)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import yaml
from click.testing import CliRunner

from twin.cli import main
from twin.lifecycle import admission, doctor
from twin.lifecycle import hostlimits as H
from twin.runtime import features, hostfacts
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]
ALL = {k: True for k in features.FEATURES}
IMAGE = hostfacts.Image("twin-node:trixie-abc", "10.3-3", True)
QUIET = admission.Host(cores=8, busy=0.0, load1=0.1)


def sources(**kw) -> doctor.Sources:
    base = doctor.Sources(
        root=lambda: True,
        engine=lambda: hostfacts.Engine(True, "27.1"),
        features=lambda: dict(ALL),
        shaping=lambda: "tc",
        settings=lambda: {},
        usage=lambda: H.Usage(mem_available_mib=1 << 20),
        cpu=lambda: QUIET,
        images=lambda: [IMAGE],
        leftovers=lambda: hostfacts.Leftovers(),
    )
    return replace(base, **kw)


def aipod():
    return load(ROOT / "topologies/aipod.yml")


def test_a_full_kernel_is_ready_and_says_so():
    r = doctor.diagnose([aipod()], sources())
    assert r.ok and not r.problems
    text = "\n".join(doctor.lines(r))
    assert "Docker engine: 27.1" in text and "NO " not in text
    assert "rate limits: tc: workload rates are shaped with tc" in text
    assert "lab aipod" in text and "VRF backend netns" in text and "host limits: enough" in text
    assert "twin-node:trixie-abc (FRR 10.3-3, current)" in text and "leftovers: none" in text
    assert text.endswith("ready: twin can run here")


def test_this_machine_s_lacks_say_what_they_change():
    lacking = dict(
        ALL, vrf=False, netem=False, red=False, fq_codel=False, matchall=False, dummy=False, vlan=False, bond=False
    )
    r = doctor.diagnose([aipod()], sources(features=lambda: lacking, shaping=lambda: "nft"))
    assert r.ok, "nothing twin needs is missing"
    text = "\n".join(doctor.lines(r))
    assert "NO  VRF devices (CONFIG_NET_VRF): tenants run on the netns VRF backend" in text
    assert "--vrf-backend device` is refused" in text
    assert "NO  the netem qdisc (CONFIG_NET_SCH_NETEM): `twin fault link-loss` drops at random with nftables" in text
    assert "not RED" in text and "policed with nftables `limit`" in text
    assert (
        "NO  Linux bonds (CONFIG_BONDING): NVUE's bonds (`interface.<bond>` of type bond) are stored with the "
        "notice even with TWIN_NVUE_BONDS=on" in text
    )


def test_what_twin_needs_missing_is_a_failure_with_the_fix():
    r = doctor.diagnose(
        [],
        sources(
            features=lambda: dict(ALL, vxlan=False), engine=lambda: hostfacts.Engine(False, error="connection refused")
        ),
    )
    assert not r.ok
    assert any("Docker engine is not reachable (connection refused)" in p and "make twin-up" in p for p in r.problems)
    assert any("no VXLAN devices" in p and "modprobe vxlan" in p for p in r.problems)
    text = "\n".join(doctor.lines(r))
    assert "MISSING: " in text and text.endswith("not ready: fix what is MISSING above")
    assert "images: none" in text, "no engine: no images asked for"


def test_not_root_is_a_failure_and_the_kernel_is_not_asked():
    asked = []
    r = doctor.diagnose([], sources(root=lambda: False, features=lambda: asked.append(1) or ALL))
    assert not r.ok and r.problems[0].startswith("not root: run it as root") and not asked


def test_device_backend_on_a_kernel_without_vrf_devices_is_named(tmp_path):
    doc = yaml.safe_load((ROOT / "topologies/aipod.yml").read_text())
    doc.setdefault("defaults", {})["vrf_backend"] = "device"
    f = tmp_path / "dev.yml"
    f.write_text(yaml.safe_dump(doc))
    fit = doctor.lab_fit(load(f), False, {}, H.Usage(mem_available_mib=1 << 20), QUIET)
    assert fit.backend == "device" and "`twin up` refuses it" in fit.backend_why


def test_host_limits_and_cpu_against_a_large_topology():
    pod8 = load(ROOT / "topologies/pod8.yml")
    settings = {"net.ipv6.neigh.default.gc_thresh3": 16}
    fit = doctor.lab_fit(
        pod8, True, settings, H.Usage(mem_available_mib=1 << 20), admission.Host(cores=0.02, busy=0.0, load1=9)
    )
    assert not fit.fits and fit.shortfalls[0].startswith("net.ipv6.neigh.default.gc_thresh3 = 16 <")
    assert "sysctl" in fit.fix and "beyond its deadline" in fit.cpu


def test_leftovers_are_named_with_how_to_remove_them():
    left = hostfacts.Leftovers({"old": ["twin-old-leaf1"]}, ["twin-old-probe"])
    text = "\n".join(doctor.lines(doctor.diagnose([], sources(leftovers=lambda: left))))
    assert "lab old: 1 container(s)" in text and "`twin down old`" in text
    assert "/run/netns/twin-old-probe" in text
    left = hostfacts.Leftovers({}, [], {"gone": ["twin-gone-mgmt"]})  # a lab's management network, alone
    text = "\n".join(doctor.lines(doctor.diagnose([], sources(leftovers=lambda: left))))
    assert "leftover?: lab gone: network twin-gone-mgmt" in text and "`twin down gone`" in text
    assert "leftovers: none" not in text


def test_every_feature_has_a_meaning():
    assert set(doctor.LACKING) == set(features.FEATURES)
    assert all(k in doctor.FIX for k in doctor.NEEDED)


def test_cli_json_and_exit_code(monkeypatch):
    monkeypatch.setattr(doctor.diagnose, "__defaults__", (sources(features=lambda: dict(ALL, veth=False)),))
    res = CliRunner().invoke(main, ["doctor", "--json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.output)
    assert doc["ok"] is False and any("veth pairs" in p for p in doc["problems"])
    assert {f["key"]: f["present"] for f in doc["features"]}["veth"] is False


def test_a_probe_tells_absent_from_present_by_the_kernel_s_errno():
    import errno

    from pyroute2 import NetlinkError

    def refuse(code):
        def fn():
            raise NetlinkError(code)

        return fn

    assert features._try(lambda: None) is True
    assert features._try(refuse(errno.EOPNOTSUPP)) is False, "no such device type"
    assert features._try(refuse(errno.ENOENT)) is False, "no such qdisc or classifier"
    assert features._try(refuse(errno.EINVAL), invalid_means_present=True) is True, "RED without options"
    assert features._try(refuse(errno.EINVAL)) is None and features._try(refuse(errno.EPERM)) is None
