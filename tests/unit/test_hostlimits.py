"""Host-wide limits (issue 19): the demand formula against measurements, the check and its
one-line refusal, the host setup's sizing, and the barrier's host-level causes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.unit.fabrics import clos
from twin.base.errors import ConvergenceTimeout
from twin.lifecycle import admission
from twin.lifecycle import hostlimits as H
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]
DEFAULTS = {  # a kernel's defaults (6.18), as on a host that never ran the host setup
    "net.ipv6.neigh.default.gc_thresh3": 1024,
    "net.ipv6.neigh.default.gc_thresh2": 512,
    "net.ipv4.neigh.default.gc_thresh3": 1024,
    "net.ipv4.neigh.default.gc_thresh2": 512,
    "net.ipv4.neigh.default.gc_thresh1": 128,
    "fs.inotify.max_user_instances": 128,
    "kernel.pid_max": 32768,
    "kernel.threads-max": 192724,
}
ROOMY = H.Usage(mem_available_mib=1 << 20)


def as_usage(d: H.Demand) -> H.Usage:
    """What a running lab of demand `d` holds (an upper bound, as the formula is)."""
    return H.Usage(arp=d.arp_all, nd=d.nd_gc, inotify=d.inotify, tasks=d.tasks, mem_available_mib=1 << 20)


def test_demand_of_the_default_lab_bounds_what_was_measured():
    d = H.demand(load(ROOT / "topologies/aipod.yml"))
    assert d == H.Demand(arp_gc=26, arp_all=56, nd_gc=158, inotify=2, tasks=276, mem_mib=252)
    # measured on the converged lab after `twin verify`, every namespace of every node counted:
    # IPv4 18 unicast (6 of them the bindings, PERMANENT since issue 18) + 10 NOARP multicast
    # + 24 PERMANENT/extern_learn; IPv6 16 link-locals + 126 multicast
    assert d.arp_gc >= 18 - 6 + 10 and d.arp_all >= 18 + 10 + 24 and d.nd_gc >= 16 + 126
    pod8 = H.demand(load(ROOT / "topologies/pod8.yml"))  # measured: IPv4 192 collectable, 592 in all
    assert (pod8.arp_gc, pod8.arp_all, pod8.inotify) == (224, 624, 8)


def test_a_fabric_takes_ten_ipv6_neighbours_per_link(tmp_path):
    d = H.demand(clos(tmp_path, 8, 88))  # the fabric of the issue: 704 links
    assert (d.nd_gc, d.arp_all, d.arp_gc, d.inotify) == (7040, 1408, 0, 0)
    assert d.tasks == 96 * H.TASKS_PER_FRR_NODE


def test_up_is_refused_with_the_numbers_on_default_settings(tmp_path):
    fabric = clos(tmp_path, 8, 88)
    short = H.check(fabric, H.Usage(nd=142, arp=52, tasks=400, mem_available_mib=20000), DEFAULTS)
    assert [(s.setting, s.have, s.need, s.lab, s.running) for s in short] == [
        ("net.ipv6.neigh.default.gc_thresh3", 1024, 7182, 7040, 142),
        ("net.ipv6.neigh.default.gc_thresh2", 512, 7182, 7040, 142),
    ]
    text = H.refusal(fabric.name, short)
    assert "\n" not in text
    assert text.startswith(
        "host limits too low for lab 'big', nothing was created: "
        "net.ipv6.neigh.default.gc_thresh3 = 1024 < 7182 needed "
        "(7040 for this lab + 142 in use now;"
    )
    assert "sudo sysctl -w net.ipv6.neigh.default.gc_thresh3=8192 net.ipv6.neigh.default.gc_thresh2=8192`" in text
    assert f"`sudo {H.SETUP}` (persistent, in /etc/sysctl.d/60-twin.conf)" in text
    refused = admission.NotAdmitted("big", short, admission.estimate(fabric, admission.Host(2, 0, 0)))
    assert str(refused) == text, "the kernel tables alone: the same line (the CPU check passes)"
    assert json.loads(json.dumps(refused.to_dict()))["shortfalls"][0]["need"] == 7182
    # once the host setup ran (its values too low for this lab), sysctl -w is what is left
    assert H.fix_command(short, setup_ran=True) == (
        "fix: `sudo sysctl -w net.ipv6.neigh.default.gc_thresh3=8192 "
        "net.ipv6.neigh.default.gc_thresh2=8192` "
        "(to keep it, in /etc/sysctl.d/60-twin.conf)"
    )


def test_a_lab_fits_beside_the_labs_already_running(tmp_path):
    small = clos(tmp_path, 2, 4, "small")  # 80 IPv6 entries
    assert H.check(small, H.Usage(nd=400, mem_available_mib=20000), DEFAULTS) == []
    short = H.check(small, H.Usage(nd=1000, mem_available_mib=20000), DEFAULTS)
    assert [(s.setting, s.need) for s in short] == [
        ("net.ipv6.neigh.default.gc_thresh3", 1080),
        ("net.ipv6.neigh.default.gc_thresh2", 1080),
    ]


def test_a_growing_apply_is_judged_by_what_it_adds_to_the_running_lab(tmp_path):
    small, grown = clos(tmp_path, 2, 4, "small"), clos(tmp_path, 2, 40, "small")  # 80 -> 800 IPv6 entries
    running = H.Usage(nd=400, mem_available_mib=20000)  # the small lab's 80 among them
    assert H.check(grown, running, DEFAULTS, grown_from=grown) == []  # no growth, nothing to judge
    assert H.check(small, running, DEFAULTS, grown_from=grown) == []  # a lab that shrinks fits
    short = H.check(grown, running, DEFAULTS, grown_from=small)
    assert [(s.setting, s.need, s.lab, s.running) for s in short] == [
        ("net.ipv6.neigh.default.gc_thresh3", 1120, 720, 400),
        ("net.ipv6.neigh.default.gc_thresh2", 1120, 720, 400),
    ]
    assert H.check(grown, running, DEFAULTS) != short, "up counts the whole lab, apply only what it adds"


def test_permanent_entries_beyond_gc_thresh1_are_no_shortfall():
    # pod8 holds 624 IPv4 entries, over the default gc_thresh1 (128), but the bindings are PERMANENT
    # and what the collector takes is learned again: only the capped entries (224 < 512) are judged
    short = H.check(load(ROOT / "topologies/pod8.yml"), ROOMY, DEFAULTS)
    assert [s.setting for s in short] == ["net.ipv6.neigh.default.gc_thresh2"]  # 720 IPv6 entries > 512


def test_settings_that_cannot_be_read_are_not_judged_but_memory_is(tmp_path):
    fabric = clos(tmp_path, 8, 88)
    assert H.check(fabric, ROOMY, {}) == []
    (short,) = H.check(fabric, H.Usage(mem_available_mib=1000), {})
    assert (short.setting, short.have, short.need) == (H.MEMORY, 1000, 96 * H.MIB_PER_FRR_NODE)
    assert H.fix_command([short]) == ""


def host_setup_values() -> dict[str, int]:
    text = (ROOT / "twin/lifecycle/host-setup.sh").read_text()
    return {k: int(v) for k, v in re.findall(r'^\s+"([\w.-]+)\|(\d+)\|', text, re.M)}


def test_the_host_setup_holds_two_128_node_fabrics_beside_the_pod_labs(tmp_path):
    settings = host_setup_values()
    assert set(settings) >= {r.setting for r in H.RULES} - {"kernel.threads-max"}
    assert settings["net.ipv6.neigh.default.gc_thresh3"] >= 10_000  # tens of thousands, not the 1,024 default
    f128 = clos(tmp_path, 8, 120)
    running = (
        H.demand(f128) + H.demand(load(ROOT / "topologies/pod8.yml")) + H.demand(load(ROOT / "topologies/aipod.yml"))
    )
    settings["kernel.threads-max"] = DEFAULTS["kernel.threads-max"]
    assert H.check(f128, as_usage(running), settings) == []
    assert H.check(load(ROOT / "topologies/pod8.yml"), as_usage(running + H.demand(f128)), settings) == []


def test_kernel_log_names_neighbour_overflow_and_oom_kills():
    log = [
        "neighbour: ndisc_cache: neighbor table overflow!",
        "br10101: port 1(vxlan10101) entered forwarding state",
        "neighbour: ndisc_cache: neighbor table overflow!",
        "Out of memory: Killed process 4242 (bgpd) total-vm:1234kB, anon-rss:99kB",
    ]
    causes = H.kernel_log_causes(log, H.Usage(nd=1019), {"net.ipv6.neigh.default.gc_thresh3": 1024}, "big")
    assert causes[0].startswith(
        "kernel: IPv6 neighbour table overflow (2 messages, rate-limited, since lab big "
        "started; host-wide: 1019 entries now, net.ipv6.neigh.default.gc_thresh3 = 1024)"
    )
    assert causes[1] == "kernel: out of memory, 1 process(es) killed since lab big started (bgpd)"
    assert H.kernel_log_causes(log[1:2], H.Usage(), {}) == []


def test_kernel_log_names_the_atomic_per_cpu_reserve_running_out():
    """Seen bringing up an 8 x 248 Clos: one such failure, and one port without its fe80::/64."""
    log = [
        "twmc5ab31be: port 256(tmfd99ae7d) entered forwarding state",
        "percpu: allocation failed, size=8 align=8 atomic=1, atomic alloc failed, no space left",
        "percpu: allocation failed, size=48 align=8 atomic=0, no space left",  # not atomic: not this cause
    ]
    (cause,) = H.kernel_log_causes(log, H.Usage(), {}, "big")
    assert cause.startswith("kernel: 1 atomic per-CPU allocation(s) failed since lab big started")
    assert "fe80::/64" in cause and "`twin fault link-down big NODE:PORT`, then `link-up`" in cause


@pytest.mark.parametrize(
    "running, watched, dead",
    [
        ({"zebra": 60, "mgmtd": 60, "staticd": 60, "watchfrr": 60}, ["zebra", "mgmtd", "bgpd", "staticd"], ["bgpd"]),
        ({"zebra": 60, "mgmtd": 60, "staticd": 60}, None, ["bgpd", "watchfrr"]),  # watchfrr gone too
        (
            {"zebra": 60, "mgmtd": 60, "staticd": 60, "bgpd": 1, "watchfrr": 60},
            ["zebra", "mgmtd", "bgpd", "staticd"],
            [],
        ),
        ({"zebra": 1, "mgmtd": 1}, None, []),  # FRR still starting
        ({"sleep": 60}, None, []),  # FRR not started
    ],
)
def test_dead_daemons_are_those_expected_and_absent(running, watched, dead):
    enabled = H.daemons_enabled((ROOT / "tests/golden/render/aipod/spine1/daemons").read_text(), has_mgmtd=True)
    assert enabled == ["bgpd", "mgmtd", "zebra"]  # twin renders staticd=no, and its image honours it
    assert H.missing_daemons(running, watched, enabled) == dead


def test_staticd_is_expected_unless_the_daemons_file_turns_it_off():
    assert H.daemons_enabled("bgpd=yes\n", has_mgmtd=False) == ["bgpd", "staticd", "zebra"]  # a user's file
    assert H.daemons_enabled("bgpd=yes\nstaticd=no\n", has_mgmtd=True) == ["bgpd", "mgmtd", "zebra"]
    assert H.daemons_enabled("staticd=yes\n", has_mgmtd=False) == ["staticd", "zebra"]


def test_convergence_timeout_names_host_causes_before_what_is_missing():
    e = ConvergenceTimeout("convergence", 300, ["leaf1: no route to spine1's loopback 10.255.0.1/32"])
    e = e.with_causes(["kernel: IPv6 neighbour table overflow (...)", "leaf3: FRR bgpd not running"])
    first, *rest = str(e).splitlines()
    assert first == (
        "convergence not reached after 300s; host-level cause: kernel: IPv6 neighbour table "
        "overflow (...) (+1 more); still missing (1):"
    )
    assert rest == [
        "  ! kernel: IPv6 neighbour table overflow (...)",
        "  ! leaf3: FRR bgpd not running",
        "  leaf1, loopback routes (1):",
        "    - leaf1: no route to spine1's loopback 10.255.0.1/32",
    ]
    assert e.with_causes([]) is e and e.missing == ["leaf1: no route to spine1's loopback 10.255.0.1/32"]


def test_an_overloaded_host_is_named_a_busy_one_is_not():
    (cause,) = H.load_causes(42.9, 2)
    assert cause.startswith("host: load average 42.9 on 2 cores: FRR runs late")
    assert H.load_causes(7.9, 2) == []
