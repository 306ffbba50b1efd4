"""NVUE's BFD, BGP timers and route-import from-vrf (issue 44): emulated (not listed as stored),
rendered into FRR as golden lines (bfdd's profile for timers other than NVUE's 3 x 300 ms, `neighbor
X timers K H`, `import vrf`), a VRF imported that the file does not declare refused, and verify's
readers of FRR's state (a BFD session Down, a hold the peer lowered, a VRF holding another's routes)
naming what they found."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.nvue_leaf import built, tree
from twin.base.errors import TopologyError
from twin.nvue import judge
from twin.nvue import tree as nv_tree
from twin.nvue.model import Bfd
from twin.verify import routeleaks

ROOT = Path(__file__).resolve().parents[2]
UPLINKS = {
    "vrf": {
        "default": {
            "router": {
                "bgp": {
                    "peer-group": {"underlay": {"bfd": {"enable": "on"}}},
                    "neighbor": {
                        "swp51": {
                            "bfd": {"enable": "on", "detect-multiplier": 4, "min-rx-interval": 200},
                            "timers": {"keepalive": 1, "hold": 3},
                        },
                        "swp52": {"timers": {"hold": 30}},
                    },
                }
            }
        }
    }
}
LEAK = {
    "vrf": {
        "RED": {
            "router": {
                "bgp": {"address-family": {"ipv4-unicast": {"route-import": {"from-vrf": {"list": {"BLUE": {}}}}}}}
            }
        }
    }
}


def test_bfd_timers_and_route_import_are_emulated_not_stored():
    nf, _ = built(UPLINKS, LEAK)
    assert [nv_tree.show(p) for p in nf.not_emulated] == []


def test_bfd_and_timers_render_as_frr_lines():
    _, x = built(UPLINKS)
    frr = x.files["frr.conf"]
    assert (
        " neighbor underlay advertisement-interval 0\n neighbor underlay bfd\n neighbor swp51 interface "
        "peer-group underlay\n neighbor swp51 timers 1 3\n neighbor swp51 bfd\n neighbor swp51 bfd profile "
        "nvue-4x200x300\n neighbor swp52 interface peer-group underlay\n neighbor swp52 timers 3 30\n"
    ) in frr
    assert frr.endswith(
        "bfd\n profile nvue-4x200x300\n  detect-multiplier 4\n  receive-interval 200\n"
        "  transmit-interval 300\n exit\nexit\n!\nend\n"
    )
    assert "bfdd=yes" in x.files["daemons"], "bfdd runs on every NVUE node: BFD set later is a reload"
    _, plain = built()
    assert "bfd" not in plain.files["frr.conf"] and "bfdd=yes" in plain.files["daemons"]


def test_a_route_import_renders_as_import_vrf_of_the_kernel_vrf():
    _, x = built(LEAK)
    red = x.files["frr.conf"].split("router bgp 65101 vrf red\n")[1].split("exit\n! end")[0]
    assert "  redistribute connected\n  import vrf blue\n exit-address-family" in red
    off = {
        "vrf": {
            "RED": {
                "router": {
                    "bgp": {"address-family": {"ipv4-unicast": {"route-import": {"from-vrf": {"enable": "off"}}}}}
                }
            }
        }
    }
    assert "import vrf" not in built(LEAK, off)[1].files["frr.conf"]


def test_a_route_import_from_a_vrf_not_declared_is_refused():
    bad = {
        "vrf": {
            "RED": {
                "router": {
                    "bgp": {
                        "address-family": {
                            "ipv4-unicast": {
                                "route-import": {"from-vrf": {"list": {"GREEN": {}, "RED": {}, "mgmt": {}}}}
                            }
                        }
                    }
                }
            }
        }
    }
    with pytest.raises(TopologyError) as e:
        built(bad)
    at = "vrf.RED.router.bgp.address-family.ipv4-unicast.route-import.from-vrf.list"
    assert sorted(f"{p.path}: {p.message}" for p in e.value.problems) == [
        f"{at}.GREEN: VRF GREEN is not declared in this file; RED may import from BLUE, default",
        f"{at}.RED: VRF RED is this VRF itself; RED may import from BLUE, default",
        f"{at}.mgmt: VRF mgmt is the management VRF; RED may import from BLUE, default",
    ]


def test_bfd_and_timers_values_are_checked_by_their_nvue_type():
    bad = {
        "vrf": {
            "default": {
                "router": {
                    "bgp": {
                        "neighbor": {
                            "swp51": {"bfd": {"detect-multiplier": 1, "min-rx-interval": 10}, "timers": {"hold": 70000}}
                        }
                    }
                }
            }
        }
    }
    _, found = nv_tree.check(tree(bad))
    at = "vrf.default.router.bgp.neighbor.swp51"
    assert sorted(str(f) for f in found if not f.stored) == [
        f"{at}.bfd.detect-multiplier: 1 is not 2-255",
        f"{at}.bfd.min-rx-interval: 10 is not 50-60000 ms",
        f"{at}.timers.hold: 70000 is not 0-65535 seconds or auto",
    ]


def test_verify_wants_each_neighbor_with_bfd_or_timers_its_own_or_its_groups():
    _, x = built(UPLINKS)
    got = {w.peer: (w.bfd, w.timers) for w in judge.wanted(x.plane.conf, x.plane.devices, x.plane.vrfs)}
    assert got == {"swp51": (Bfd(4, 200, 300), (1, 3)), "swp52": (Bfd(), (3, 30))}


def test_verify_names_a_bfd_session_down_and_a_hold_the_peer_lowered():
    w = judge.Wanted("default", "swp51", Bfd(4, 200, 300), (1, 3))
    # bgpd shows its own defaults (3 x 300/300) for a neighbor whose BFD comes from a profile: bfdd's session is read
    up = {
        "bgpState": "Established",
        "peerBfdInfo": {"status": "Up", "detectMultiplier": 3, "rxMinInterval": 300, "txMinInterval": 300},
        "bgpTimerConfiguredKeepAliveIntervalMsecs": 1000,
        "bgpTimerConfiguredHoldTimeMsecs": 3000,
        "bgpTimerHoldTimeMsecs": 3000,
    }
    session = {
        "peer": "fe80::1",
        "interface": "swp51",
        "vrf": "default",
        "status": "up",
        "detect-multiplier": 4,
        "receive-interval": 200,
        "transmit-interval": 300,
    }
    sessions = [{**session, "interface": "swp52", "detect-multiplier": 3}, session]
    assert judge.session(sessions, w) is session
    assert judge.session(sessions, judge.Wanted("red", "swp51", None, None)) is None
    assert judge._bfd(w, up, session) == [] and judge._timers(w, up) == []
    assert judge._bfd(w, up, {**session, "detect-multiplier": 3}) == [
        "swp51: BFD runs 3 x 200/300 ms, 4 x 200/300 ms set"
    ]
    assert judge._bfd(w, up, None) == ["swp51: bfdd has no session for it (BFD 4 x 200/300 ms set)"]
    down = {**up, "peerBfdInfo": {**up["peerBfdInfo"], "status": "Down"}}
    assert judge._bfd(w, down, session) == [
        "swp51: BFD session Down (BFD 4 x 200/300 ms set; BGP Established): its "
        "peer runs no BFD for this session, or cannot reach it"
    ]
    assert judge._bfd(w, {"bgpState": "Established"}, session) == [
        "swp51: FRR runs no BFD for it (BFD 4 x 200/300 ms set)"
    ]
    wide = judge.Wanted("red", "10.0.0.1", None, (3, 30))
    lowered = {
        **up,
        "bgpTimerConfiguredKeepAliveIntervalMsecs": 3000,
        "bgpTimerConfiguredHoldTimeMsecs": 30000,
        "bgpTimerHoldTimeMsecs": 9000,
    }
    assert judge._timers(wide, lowered) == [
        "10.0.0.1 (VRF red): hold 30 s set, the session runs 9 s (its peer sets "
        "a lower hold: a failure is detected in the peer's time, not this one's)"
    ]
    assert judge._peer({"red": {"10.0.0.1": lowered}}, wide) is lowered
    tight = judge.Wanted("default", "swp51", None, (1, 3))
    assert judge._timers(tight, {**up, "bgpTimerHoldTimeMsecs": 9000}) == [
        "swp51: hold 3 s set, the session runs 9 s: it opened before the timers were set and keeps what it "
        "negotiated then until it is re-established (clear bgp)"
    ]


def test_a_vrf_holding_another_vrfs_routes_is_a_leak():
    doc = {
        "10.2.2.0/24": [{"protocol": "bgp", "nexthops": [{"interfaceName": "lo", "vrf": "blue"}]}],
        "10.1.1.0/24": [{"protocol": "connected", "nexthops": [{"interfaceName": "br10101"}]}],
        "10.1.1.12/32": [{"protocol": "bgp", "nexthops": [{"ip": "10.255.0.3", "vrf": "red"}]}],
    }
    assert routeleaks.leaked("red", doc) == {"10.2.2.0/24": "blue"}
    assert routeleaks.leaked("red", {}) == {}


def test_a_group_two_dialects_bring_runs_both_parts_in_order(monkeypatch):
    """One hook (`Dialect.groups`): NVUE brings protocols, acl and qos; a group brought twice (twin's
    or another dialect's) runs both parts, their checks and extras together."""
    import dataclasses

    from twin import verify
    from twin.config import dialect
    from twin.verify.result import Check

    assert {"protocols", "acl", "qos"} <= set(verify.all_groups())
    assert verify.all_groups()["protocols"] is judge.protocols, "NVUE's alone: no other part"
    nvue = dialect._REGISTERED["nvue"]
    mine = dataclasses.replace(
        nvue, groups={**nvue.groups, "protocols": lambda ctx: [Check("protocols", "bfd leaf1", True)]}
    )
    other = dataclasses.replace(
        nvue,
        name="other",
        groups={
            "protocols": lambda ctx: [Check("protocols", "ospf leaf1", True)],
            "mtu": lambda ctx: ([Check("mtu", "jumbo", False, "1500 set")], {"note": 1}),
        },
    )
    monkeypatch.setitem(dialect._REGISTERED, "nvue", mine)
    monkeypatch.setitem(dialect._REGISTERED, "other", other)
    monkeypatch.setattr(verify, "GROUPS", {**verify.GROUPS, "mtu": lambda ctx: [Check("mtu", "swp1", True)]})
    groups = verify.all_groups()
    assert [c.name for c in groups["protocols"](None)] == ["bfd leaf1", "ospf leaf1"]
    out, extra = groups["mtu"](None)
    assert [c.name for c in out] == ["swp1", "jumbo"] and extra == {"note": 1}
