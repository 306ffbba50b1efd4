"""NVUE's community, large-community and AS-path lists and the route-map matches and sets on them
(issue 44): emulated (not listed as stored), rendered as FRR's lines (golden), what NVUE's types refuse
named with the key, and verify's judge of a bound route map (`twin.nvue.policycheck`) naming what it
finds in FRR's JSON taken from real nodes (tests/golden/interop/nvue/frr-policy: the lab of
tests/e2e/nvue/policy.yml, leaf1 AS 65101 on spine1's swp1, leaf2 AS 65102, spine1 AS 65000)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.nvue_leaf import built
from twin.base.errors import TopologyError
from twin.nvue import policycheck
from twin.nvue import tree as nv_tree
from twin.nvue.policy import Policy
from twin.nvue.policycheck import Bound, Route

ROOT = Path(__file__).resolve().parents[2]
FRR = ROOT / "tests/golden/interop/nvue/frr-policy"
SHOW = "show bgp vrf default ipv4 unicast"
POLICY = {
    "router": {
        "policy": {
            "community-list": {
                "FABRIC": {"rule": {"10": {"action": "permit", "community": {"65000:100": {}, "no-export": {}}}}},
                "7": {"rule": {"5": {"action": "deny", "community": {"1:1": {}}}}},
            },
            "large-community-list": {"BIG": {"rule": {"5": {"action": "deny", "large-community": {"65000:1:2": {}}}}}},
            "as-path-list": {"MINE": {"rule": {"10": {"action": "permit", "aspath-exp": "^$"}}}},
            "route-map": {
                "OUT": {
                    "rule": {
                        "10": {"action": "deny", "match": {"as-path-list": "MINE"}},
                        "20": {
                            "action": "permit",
                            "match": {"community-list": "FABRIC", "large-community-list": "BIG"},
                            "set": {
                                "community": {"additive": {}, "65000:7": {}},
                                "large-community": {"1:2:3": {}},
                                "as-path-prepend": {"last-as": 2},
                                "ip-nexthop": "peer-addr",
                                "local-preference": 5,
                            },
                        },
                        "30": {
                            "action": "permit",
                            "match": {"community-list": "7"},
                            "set": {
                                "community": {"none": {}},
                                "as-path-prepend": {"as": 65101},
                                "ip-nexthop": "10.0.0.1",
                            },
                        },
                    }
                }
            },
        }
    },
    "vrf": {
        "default": {
            "router": {
                "bgp": {
                    "neighbor": {
                        "swp51": {
                            "address-family": {
                                "ipv4-unicast": {
                                    "policy": {"outbound": {"route-map": "OUT"}, "inbound": {"route-map": "OUT"}}
                                }
                            }
                        }
                    }
                }
            }
        }
    },
}


def refused(*extras: dict) -> list[str]:
    with pytest.raises(TopologyError) as e:
        built(*extras)
    return sorted(f"{p.path}: {p.message}" for p in e.value.problems)


def test_lists_matches_and_sets_are_emulated_and_render_as_frr_lines():
    nf, x = built(POLICY)
    assert [nv_tree.show(p) for p in nf.not_emulated] == []
    frr = x.files["frr.conf"]
    assert (
        "bgp community-list standard FABRIC seq 10 permit 65000:100 no-export\n"
        "bgp community-list 7 seq 5 deny 1:1\n"
        "bgp large-community-list standard BIG seq 5 deny 65000:1:2\n"
        "bgp as-path access-list MINE seq 10 permit ^$\n"
        "route-map OUT deny 10\n match as-path MINE\nexit\n!\n"
        "route-map OUT permit 20\n match community FABRIC\n match large-community BIG\n"
        " set as-path prepend last-as 2\n set community 65000:7 additive\n set ip next-hop peer-address\n"
        " set large-community 1:2:3\n set local-preference 5\nexit\n!\n"
        "route-map OUT permit 30\n match community 7\n set as-path prepend 65101\n set community none\n"
        " set ip next-hop 10.0.0.1\nexit\n!\n"
    ) in frr
    # the lists before the maps that name them, both before BGP; an inbound map keeps what the neighbor sends
    assert frr.index("bgp community-list") < frr.index("route-map OUT") < frr.index("router bgp 65101")
    assert (
        "  neighbor swp51 route-map OUT out\n  neighbor swp51 route-map OUT in\n"
        "  neighbor swp51 soft-reconfiguration inbound\n" in frr
    )
    # a route map edited takes effect (FRR's delay-timer 0 never applies an edit to a running session)
    assert "bgp route-map delay-timer 1\n" in frr
    assert "bgp route-map delay-timer 0\n" in built()[1].files["frr.conf"]


def test_what_nvue_refuses_of_lists_and_their_use_is_named_with_the_key():
    at = "router.policy.route-map.RM.rule.10"
    said = refused(
        {
            "router": {
                "policy": {
                    "community-list": {
                        "C": {"rule": {"1": {"action": "permit", "community": {"70000:1": {}, "x\ny": {}}}}},
                        "1abc": {"rule": {"1": {"action": "permit"}}},
                    },
                    "large-community-list": {"L": {"rule": {"1": {"large-community": {"1:2:4294967296": {}}}}}},
                    "as-path-list": {
                        "A": {"rule": {"1": {"action": "permit", "aspath-exp": "^1$\nip route 0.0.0.0/0 lo"}}}
                    },
                    "route-map": {
                        "RM": {
                            "rule": {
                                "10": {
                                    "action": "permit",
                                    "match": {"community-list": "NOPE"},
                                    "set": {
                                        "community": {"additive": {}},
                                        "as-path-prepend": {"as": 65101, "last-as": 2},
                                        "ip-nexthop": "peer",
                                    },
                                }
                            }
                        }
                    },
                }
            }
        }
    )
    assert said == sorted(
        [
            "router.policy.community-list.C.rule.1.community['70000:1']: '70000:1' is not a community AA:NN (each "
            "0-65535) or one of internet, local-AS, no-advertise, no-export, graceful-shutdown, blackhole, no-peer, "
            "accept-own",
            "router.policy.community-list.C.rule.1.community['x\\ny']: 'x\\ny' is not a community AA:NN (each 0-65535) "
            "or one of internet, local-AS, no-advertise, no-export, graceful-shutdown, blackhole, no-peer, accept-own",
            "router.policy.community-list.1abc: '1abc' is not a list name (1-63 of letters, digits, _ and -, "
            "starting with a letter) or a number 1-99",
            "router.policy.large-community-list.L.rule.1.large-community['1:2:4294967296']: '1:2:4294967296' is not a "
            "large community like 65101:1:100 (three numbers of 0-4294967295)",
            "router.policy.as-path-list.A.rule.1.aspath-exp: '^1$\\nip route 0.0.0.0/0 lo' is not an AS-path regular "
            "expression: 1-255 of digits, spaces and _ ^ $ . * + ? ( ) [ ] { } | , -",
            f"{at}.set.ip-nexthop: 'peer' is not an IPv4 address, unchanged or peer-addr",
        ]
    )
    # the values right, what the node refuses: a list not declared, additive alone, both prepends, a rule half
    said = refused(
        {
            "router": {
                "policy": {
                    "community-list": {"C": {"rule": {"1": {"action": "permit"}}}},
                    "route-map": {
                        "RM": {
                            "rule": {
                                "10": {
                                    "action": "permit",
                                    "match": {"community-list": "NOPE", "as-path-list": "A"},
                                    "set": {
                                        "community": {"additive": {}},
                                        "large-community": {"none": {}, "1:2:3": {}},
                                        "as-path-prepend": {"as": 65101, "last-as": 2},
                                    },
                                }
                            }
                        }
                    },
                }
            }
        }
    )
    assert said == sorted(
        [
            "router.policy.community-list.C.rule.1.community: a rule needs its community",
            f"{at}.match.community-list: no community-list NOPE in router.policy.community-list (declared: C)",
            f"{at}.match.as-path-list: no as-path-list A in router.policy.as-path-list (declared: none)",
            f"{at}.set.community: additive adds the community values named beside it: none named",
            f"{at}.set.large-community: none clears the route's large-community: it takes nothing beside it",
            f"{at}.set.as-path-prepend: one of as or last-as",
        ]
    )


def fixture(name: str) -> dict:
    return json.loads((FRR / f"{name}.json").read_text())


def uplink(*rules: tuple[str, dict]) -> Policy:
    return Policy.of(
        {
            "router": {
                "policy": {
                    "as-path-list": {"LOCAL": {"rule": {"10": {"action": "permit", "aspath-exp": "^$"}}}},
                    "community-list": {"NOLEAF": {"rule": {"10": {"action": "permit", "community": {"65000:20": {}}}}}},
                    "route-map": {"UPLINK": {"rule": dict(rules)}, "FROM-LEAF": {"rule": dict(rules)}},
                }
            }
        }
    )


NEEDED = {"10.255.0.2/32": "leaf1", "10.255.0.3/32": "leaf2"}  # what spine1 must reach


def out(doc: dict, policy: Policy, at_peer: bool = True) -> list[str]:
    b = Bound("default", "swp51", "out", "UPLINK")
    docs = [doc["leaf1"][c] for c in b.commands()]
    peer = policycheck.paths_from(doc["spine1"][f"{SHOW} detail json"], "swp1") if at_peer else None
    return policycheck.judge("leaf1", b, policy, docs, NEEDED, "spine1", peer)[0]


def test_an_outbound_map_withholding_the_leafs_loopback_is_named_with_its_rule_and_a_stale_map_too():
    # leaf1's UPLINK: rule 10 denies what it originates (AS path ^$), rule 20 sets a community; FRR had not yet
    # applied rule 10 to the session (FRR's route-map delay-timer 0): the loopback was still advertised
    pol = uplink(
        ("10", {"action": "deny", "match": {"as-path-list": "LOCAL"}}),
        ("20", {"action": "permit", "set": {"community": {"65000:20": {}}}}),
    )
    got = out(fixture("loopback-withheld"), pol)
    assert got == [
        "leaf1 swp51 out: route-map UPLINK rule 10 (deny, as-path-list LOCAL) denies 10.255.0.2/32, still advertised "
        "to spine1",
        "leaf1 swp51 out: route-map UPLINK rule 10 (deny, as-path-list LOCAL) withholds 10.255.0.2/32 (leaf1's "
        "loopback) from spine1: the fabric needs it",
    ]


def test_a_deny_all_map_is_named_with_its_rule_and_every_prefix_of_the_session():
    pol = uplink(("5", {"action": "deny"}), ("20", {"action": "permit", "set": {"community": {"65101:1": {}}}}))
    assert out(fixture("deny-all"), pol) == [
        "leaf1 swp51 out: route-map UPLINK rule 5 (deny) withholds 10.255.0.2/32 (leaf1's loopback) from spine1: the "
        "fabric needs it",
        "leaf1 swp51 out: route-map UPLINK rule 5 (deny) denies every route of the session (3: 10.255.0.1/32, "
        "10.255.0.2/32, 10.255.0.3/32): nothing is advertised to spine1",
    ]


def test_a_community_set_and_stripped_by_the_peer_is_named():
    pol = uplink(("20", {"action": "permit", "set": {"community": {"65101:1": {}}}}))
    assert out(fixture("community-stripped"), pol) == [
        "leaf1 swp51 out: route-map UPLINK rule 20 sets community 65101:1 on 10.255.0.2/32; spine1 holds it from "
        "leaf1 with no community"
    ]


def test_a_community_the_spine_refuses_is_named_at_the_spine_and_the_leaf_passes():
    doc = fixture("community-refused")
    leaf = uplink(("20", {"action": "permit", "set": {"community": {"65000:20": {}}}}))
    assert out(doc, leaf, at_peer=False) == []
    spine = uplink(("10", {"action": "deny", "match": {"community-list": "NOLEAF"}}), ("20", {"action": "permit"}))
    b = Bound("default", "swp1", "in", "FROM-LEAF")
    sent = policycheck.per_neighbor(
        doc["leaf1"][f"{SHOW} neighbors swp51 advertised-routes detail json"], "advertisedRoutes"
    )
    got, data = policycheck.judge("spine1", b, spine, [doc["spine1"][c] for c in b.commands()], NEEDED, "leaf1", sent)
    assert got == [
        "spine1 swp1 in: route-map FROM-LEAF rule 10 (deny, community-list NOLEAF) refuses 10.255.0.2/32 (leaf1's "
        "loopback) sent by leaf1: the fabric needs it",
        "spine1 swp1 in: route-map FROM-LEAF rule 10 (deny, community-list NOLEAF) denies every route of the session "
        "(1: 10.255.0.2/32): nothing is accepted from leaf1",
    ]
    # what leaf1 sent back (spine1's own loopback, leaf2's through spine1) carries AS 65000: BGP refuses it, not the map
    assert data == {"route-map": "FROM-LEAF", "way": "in", "denied": ["10.255.0.2/32"]}


def test_the_rule_a_route_meets():
    rule = lambda action, **match: {"action": action, "match": match}  # noqa: E731
    pol = Policy.of(
        {
            "router": {
                "policy": {
                    "prefix-list": {
                        "LO": {"rule": {"10": rule("permit", **{"10.255.0.0/16": {"min-prefix-len": 32}})}},
                        "NET": {"rule": {"10": rule("permit", **{"10.1.0.0/16": {}})}},
                    },
                    "as-path-list": {
                        "VIA": {
                            "rule": {
                                "5": {"action": "deny", "aspath-exp": "^65000_"},
                                "10": {"action": "permit", "aspath-exp": "_65102$"},
                            }
                        }
                    },
                    "large-community-list": {
                        "BIG": {"rule": {"5": {"action": "permit", "large-community": {"1:2:3": {}}}}}
                    },
                    "route-map": {
                        "M": {
                            "rule": {
                                "10": rule("deny", **{"ip-prefix-list": "NET"}),
                                "20": rule("permit", **{"as-path-list": "VIA"}),
                                "30": rule("deny", **{"large-community-list": "BIG"}),
                                "40": rule("permit", **{"ip-prefix-list": "LO"}),
                            }
                        }
                    },
                }
            }
        }
    )
    seq = lambda r: (policycheck.rule_of(pol, "M", r) or type("", (), {"seq": None})).seq  # noqa: E731
    assert seq(Route("10.1.0.0/16")) == 10 and seq(Route("10.1.1.0/24")) is None  # exact length without ge/le
    assert seq(Route("10.9.0.0/24", "65101 65102")) == 20
    assert seq(Route("10.9.0.0/24", "65000 65102")) is None  # the list's first rule denies: no match
    assert seq(Route("10.9.0.0/24", "", large=("1:2:3",))) == 30
    assert seq(Route("10.255.0.9/32")) == 40 and seq(Route("10.255.0.0/24")) is None
