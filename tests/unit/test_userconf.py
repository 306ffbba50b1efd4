"""The user's own FRR configs (issue 11): reading a directory, matching it to a fabric, what twin
adapts (and says so), FRR's dry-run answer as file:line problems, and route-target diagnosis."""

from __future__ import annotations

from pathlib import Path

import pytest

from twin import topology
from twin.base.errors import TopologyError
from twin.config import userconf
from twin.config.render import render_lab
from twin.runtime import dryrun
from twin.verify import rts

ROOT = Path(__file__).resolve().parents[2]
AIPOD = topology.load(ROOT / "topologies/aipod.yml")


def test_both_layouts_are_read_and_matched_to_the_fabric(tmp_path):
    (tmp_path / "leaf1").mkdir()
    (tmp_path / "leaf1" / "frr.conf").write_text("hostname leaf1\n")
    (tmp_path / "leaf1" / "daemons").write_text("bgpd=yes\n")
    (tmp_path / "leaf1" / "lldp.json").write_text("{}")  # not a config: left alone
    (tmp_path / "spine1.conf").write_text("hostname spine1\n")
    (tmp_path / "README.md").write_text("notes")
    c = userconf.load(tmp_path, AIPOD)
    assert c.files == {
        "leaf1": {"frr.conf": "hostname leaf1\n", "daemons": "bgpd=yes\n"},
        "spine1": {"frr.conf": "hostname spine1\n"},
    }
    assert c.owned() == {"leaf1": ["daemons", "frr.conf"], "spine1": ["frr.conf"]}
    assert c.path("spine1", "frr.conf") == str(tmp_path / "spine1.conf")


def test_every_problem_of_a_directory_is_named_at_once(tmp_path):
    (tmp_path / "leaf9.conf").write_text("x\n")
    (tmp_path / "host1a.conf").write_text("x\n")
    (tmp_path / "leaf1").mkdir()
    (tmp_path / "leaf1" / "frr.conf").write_bytes(b"hostname leaf1\n\xff\xfe")
    with pytest.raises(TopologyError) as e:
        userconf.load(tmp_path, AIPOD)
    assert "leaf1/frr.conf:2:1: the file is not UTF-8 text: byte 15 (0xff)" in str(e.value)
    (tmp_path / "leaf1" / "frr.conf").write_text("ok\n")
    (tmp_path / "leaf1.conf").write_text("twice\n")
    with pytest.raises(TopologyError) as e:
        userconf.read_dir(tmp_path)
    assert "leaf1's frr.conf is given twice" in str(e.value)
    (tmp_path / "leaf1.conf").unlink()
    problems = userconf.check(userconf.read_dir(tmp_path), AIPOD)
    text = "\n".join(map(str, problems))
    assert "host1a.conf: host1a is a host: it runs no FRR, so it takes no FRR config" in text
    assert "leaf9.conf: no FRR node 'leaf9' in lab 'aipod'; FRR nodes: dpu1, dpu2, leaf1, leaf2, spine1, spine2" in text


def test_a_vteps_daemons_file_gets_the_vrf_backend_its_kernel_plane_needs_and_twin_says_so():
    plain = 'bgpd=yes\nzebra_options="  -A 127.0.0.1 -s 90000000"\n'
    text, note = userconf.adapt_daemons(plain, netns_vrfs=True)
    assert 'zebra_options="  -A 127.0.0.1 -s 90000000 -n"' in text and "gets -n" in note
    assert userconf.adapt_daemons(text, netns_vrfs=True) == (text, "")
    back, note = userconf.adapt_daemons(text, netns_vrfs=False)
    assert "-n" not in back.split("zebra_options=")[1] and "loses -n" in note
    text, note = userconf.adapt_daemons("bgpd=yes\n", netns_vrfs=True)
    assert text.endswith('zebra_options="  -A 127.0.0.1 -s 90000000 -n"\n') and note


def test_merge_puts_the_users_files_over_twins_and_adapts_only_vteps(tmp_path):
    c = userconf.UserConfigs(
        str(tmp_path), {"dpu1": {"frr.conf": "mine\n", "daemons": "bgpd=yes\n"}, "spine1": {"daemons": "bgpd=yes\n"}}
    )
    rendered = render_lab(AIPOD, "netns")
    files, notes = userconf.merge(rendered, c, AIPOD, "netns")
    assert files["dpu1"]["frr.conf"] == "mine\n" and files["dpu1"]["vtysh.conf"] == rendered["dpu1"]["vtysh.conf"]
    assert files["spine1"]["daemons"] == "bgpd=yes\n" and files["leaf1"] == rendered["leaf1"]
    assert notes == [
        f"{tmp_path}/dpu1/daemons: zebra_options gets -n: the lab's tenant VRFs are network namespaces "
        "(twin's netns VRF backend, FRR's netns VRF backend)"
    ]


DRYRUN_OUT = """\
=== twin: leaf1
line 40: % Unknown command[28]:  neighbor swp1 interfacee peer-group fabric
Configuration file[/etc/frr/frr.conf] processing failure: 2
=== twin: leaf1 rc=2
=== twin: spine1
=== twin: spine1 rc=0
=== twin: dpu1
% something FRR says without a line
=== twin: dpu1 rc=1
=== twin: daemons
bgpd
ospfd
zebra
"""


def test_frrs_dry_run_answer_becomes_file_line_problems_and_missing_daemons_are_named(tmp_path):
    c = userconf.UserConfigs(
        str(tmp_path),
        {
            "leaf1": {"frr.conf": "x"},
            "spine1": {"frr.conf": "x"},
            "dpu1": {"frr.conf": "x", "daemons": "zebra=yes\nbgpd=yes\nldpd=yes\n"},
        },
    )
    got = [str(p) for p in dryrun.parse(DRYRUN_OUT, c)]
    assert got == [
        f"{tmp_path}/leaf1/frr.conf:40: % Unknown command[28]:  neighbor swp1 interfacee peer-group fabric",
        f"{tmp_path}/dpu1/frr.conf: vtysh --dryrun exited 1: % something FRR says without a line",
        f"{tmp_path}/dpu1/daemons:3: ldpd=yes: the node image's FRR has no ldpd (it has bgpd, ospfd, zebra)",
    ]


def test_route_targets_that_do_not_meet_are_named_with_both_sides():
    tables = {"dpu1": {10100: (["65000:999"], ["59905:10100"])}, "dpu2": {10100: (["59906:10100"], ["59906:10100"])}}
    assert rts.problems("dpu2", 10100, tables, ["dpu1"]) == []  # auto-derived RTs meet across ASNs
    assert rts.problems("dpu1", 10100, tables, ["dpu2"]) == [
        "imports route-target 65000:999 for VNI 10100, but dpu2 exports 59906:10100: none of dpu2's routes of it "
        "are taken"
    ]
    assert rts.rt_table({"numVnis": 1, "10100": {"vni": 10100, "importRTs": ["a:1"], "exportRTs": ["b:1"]}}) == {
        10100: (["a:1"], ["b:1"])
    }


def test_a_routers_own_config_with_static_routes_gets_staticd():
    """A router whose config came alone: twin's daemons file starts what it configures, staticd too
    (twin's own rendering turns staticd off; the image's init script honours `staticd=no`)."""
    from twin.config import render
    from twin.topology.model import Node

    node = Node(name="r1", kind="router")
    assert "\nstaticd=yes\n" in render.daemons_file(node, ["ospfd", "staticd"])
    assert "\nospfd=yes\n" in render.daemons_file(node, ["ospfd", "staticd"])
    assert "\nstaticd=no\n" in render.daemons_file(node, ["bgpd"])
