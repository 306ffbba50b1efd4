"""The VRF backend: netns on every kernel unless a topology or `--vrf-backend` asks for VRF
devices; a kernel without them (CONFIG_NET_VRF) refuses the device backend at once, and warns
of the user's own input that makes or needs VRF devices (the lab goes on, as containerlab's
would), each naming what twin offers instead."""

from pathlib import Path

import pytest
import yaml

from twin.base.errors import TopologyError
from twin.config.backend import DEFAULT_BACKEND, DEVICE, NETNS, device_needs, wanted
from twin.lifecycle.vrfbackend import choose, config_warnings
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]
AIPOD = load(ROOT / "topologies/aipod.yml")


def topo(tmp_path, **defaults):
    doc = yaml.safe_load((ROOT / "tests/e2e/small.yml").read_text())
    doc["defaults"] = defaults
    doc["nodes"]["leaf2"]["exec"] = ["ip link add mgmt type vrf table 1100", "ip link set mgmt up"]
    f = tmp_path / "lab.yml"
    f.write_text(yaml.safe_dump(doc))
    return load(f)


def never(lab):
    pytest.fail("the kernel asked although nothing needs VRF devices")


def test_netns_is_the_default_on_every_kernel_and_the_kernel_is_not_asked():
    assert DEFAULT_BACKEND == NETNS == "netns"
    c = choose(AIPOD, probe=never)
    assert (c.backend, c.vrf_devices) == (NETNS, None)
    assert str(c).startswith("netns (the default on every kernel; `vrf_backend: device` in the topology's defaults")
    assert choose(AIPOD, probe=lambda lab: True).backend == NETNS, "a kernel with VRF devices changes nothing"


def test_the_device_backend_is_asked_for_and_refused_without_vrf_devices(tmp_path):
    f = topo(tmp_path, vrf_backend="device")
    assert wanted(f) == (DEVICE, "the topology's defaults.vrf_backend: device")
    assert wanted(f, "netns")[0] == NETNS, "--vrf-backend wins over the file"
    with pytest.raises(TopologyError) as e:
        choose(f, probe=lambda lab: False)
    text = str(e.value)
    assert (
        "defaults.vrf_backend: the device VRF backend needs Linux VRF devices, but this kernel has no Linux "
        "VRF devices (CONFIG_NET_VRF is not set); twin's netns backend (the default" in text
    )
    assert "drop `vrf_backend: device`" in text
    assert "exec[0]" not in text, "the device backend is what is refused; an exec is the lab's to report"
    c = choose(f, probe=lambda lab: True)
    assert (c.backend, c.vrf_devices) == (DEVICE, True) and "this kernel has VRF devices" in str(c)
    with pytest.raises(TopologyError, match="--vrf-backend: the device VRF backend .* drop `--vrf-backend device`"):
        choose(AIPOD, "device", probe=lambda lab: False)


def test_the_topology_says_netns_or_device_and_nothing_else(tmp_path):
    with pytest.raises(TopologyError, match="defaults.vrf_backend: must be 'netns' or 'device'; got 'vrf'"):
        topo(tmp_path, vrf_backend="vrf")
    assert topo(tmp_path, vrf_backend="netns").vrf_backend == "netns"
    assert "vrf_backend" not in AIPOD.model_dump(), "the recorded intent of a lab that does not ask is as it was"


def test_user_configs_needing_vrf_devices_are_named_with_their_file():
    conf = "vrf red\n vni 5001\nexit-vrf\nvrf mgmt\nexit-vrf\nrouter bgp 65000 vrf blue\n"
    needs = device_needs(
        AIPOD,
        {"dpu1": {"frr.conf": conf}, "spine1": {"frr.conf": "router bgp 65000\n"}},
        {"dpu1": "/cfg/dpu1/frr.conf"},
    )
    tenants_on_dpu1 = {t.vrf for t in AIPOD.tenants_on("dpu1")}
    assert "red" in tenants_on_dpu1, "a tenant's VRF is twin's to make: no need"
    assert [(p.file, p.message) for p in needs] == [
        (
            "/cfg/dpu1/frr.conf",
            f"VRF {v} is no tenant of the topology on dpu1: zebra needs a Linux VRF device {v} for it",
        )
        for v in sorted({"mgmt", "blue"} - tenants_on_dpu1)
    ]
    c = choose(
        AIPOD, user_files={"dpu1": {"frr.conf": conf}}, where={"dpu1": "/cfg/dpu1/frr.conf"}, probe=lambda lab: False
    )
    assert c.backend == NETNS and c.vrf_devices is False, "the lab goes on, as containerlab's would"
    assert [w.split(": VRF ")[0] for w in c.warnings] == ["/cfg/dpu1/frr.conf"] * len(needs)
    assert all(
        "CONFIG_NET_VRF" in w and "zebra keeps that VRF inactive" in w and "make the VRF a tenant" in w
        for w in c.warnings
    ), c.warnings


def test_new_configs_of_a_running_lab_are_warned_of_as_up_warns(tmp_path):
    """`twin apply LAB DIR`: a VRF of the new configs that no tenant makes is warned of (the change
    goes on); the topology's own exec commands are not the change's to warn of again."""
    fabric = topo(tmp_path)
    conf = {"leaf1": {"frr.conf": "vrf mgmt\nexit-vrf\nrouter bgp 65101\n"}}
    (w,) = config_warnings(fabric, conf, {"leaf1": "new/leaf1/frr.conf"}, probe=lambda lab: False)
    assert (
        w.startswith("new/leaf1/frr.conf: VRF mgmt is no tenant of the topology on leaf1")
        and "zebra keeps that VRF inactive" in w
        and "CONFIG_NET_VRF" in w
    ), w
    assert config_warnings(fabric, conf, {}, probe=lambda lab: True) == (), "a kernel with VRF devices runs it"
    assert config_warnings(fabric, {"leaf1": {"frr.conf": "router bgp 65101\n"}}, {}, probe=never) == ()


def test_an_exec_making_a_vrf_device_is_a_warning_with_the_way_out(tmp_path):
    c = choose(topo(tmp_path), probe=lambda lab: False)
    assert c.backend == NETNS and len(c.warnings) == 1, c.warnings
    assert c.warnings[0].endswith(
        "nodes.leaf2.exec[0]: `ip link add mgmt type vrf table 1100` makes a Linux VRF "
        "device, but this kernel has no Linux VRF devices (CONFIG_NET_VRF is not set): the "
        "command will fail and be reported, and the lab goes on (--strict-exec: it ends the "
        "bring-up); twin's netns backend (the default: each tenant a network namespace, "
        "FRR's netns VRF backend) runs on every kernel: make the VRF a tenant of the "
        "topology (twin makes its namespace and FRR's VRF)"
    ), c.warnings[0]
    assert choose(topo(tmp_path), probe=lambda lab: True).warnings == (), "a kernel with VRF devices: nothing to say"
