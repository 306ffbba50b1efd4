"""`twin validate`: checks and renders a topology without creating anything, for CI."""

import json
from pathlib import Path

from click.testing import CliRunner

from twin.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    return CliRunner().invoke(main, list(args), prog_name="twin")


def test_a_valid_topology_is_summarised_rendered_and_sized_against_the_host(monkeypatch):
    monkeypatch.chdir(ROOT)
    res = run("validate", "topologies/aipod.yml", "--json")
    doc = json.loads(res.output)
    assert res.exit_code == (0 if not doc["host"]["short"] else 1)
    assert doc["valid"] and doc["problems"] == []
    assert doc["summary"] == {
        "nodes": {"spine": 2, "leaf": 2, "dpu": 2, "host": 6},
        "links": 14,
        "sessions": 8,
        "tenants": 2,
        "vteps": 2,
    }
    assert doc["rendered"]["dpu1"] == [
        "daemons",
        "frr.conf",
        "interfaces.sh",
        "nftables-blue.nft",
        "nftables-red.nft",
        "vtysh.conf",
    ]
    assert doc["host"]["needs"]["IPv6 neighbours"] > 0
    text = run("validate", "topologies/aipod.yml")
    assert "valid: 2 spine, 2 leaf, 2 dpu, 6 host; 14 links, 8 BGP sessions" in text.output


def test_an_invalid_topology_lists_every_problem_and_exits_1(monkeypatch):
    monkeypatch.chdir(ROOT)
    res = run("validate", "tests/golden/invalid/bad-links.yml")
    assert res.exit_code == 1 and "error: 6 problems in tests/golden/invalid/bad-links.yml" in res.output
    doc = json.loads(run("validate", "tests/golden/invalid/bad-links.yml", "--json").output)
    assert not doc["valid"] and len(doc["problems"]) == 6 and doc["summary"] is None
    assert all(p["line"] and p["file"] == "tests/golden/invalid/bad-links.yml" for p in doc["problems"])
    bad = run("validate", "topologies/aipod.yml", "--name", "../x")
    assert bad.exit_code == 1 and "lab name '../x' is not allowed" in bad.output


def test_every_front_door_up_takes_is_validated_the_same_way(monkeypatch):
    monkeypatch.chdir(ROOT)
    for f in (
        "tests/golden/interop/air/demo.json",
        "tests/golden/interop/air/demo.dot",
        "tests/golden/interop/containerlab/frr01/frr01.clab.yml",
    ):
        res = run("validate", f, "--json")
        doc = json.loads(res.output)
        assert doc["valid"] and doc["summary"]["links"] == (4 if "air" in f else 6), f
    res = run("validate", "tests/golden/interop/air/demo.json", "--role", "leaf01=firewall")
    assert res.exit_code == 1 and "error: 1 problem in tests/golden/interop/air/demo.json" in res.output
    assert "--role leaf01: unknown kind 'firewall'" in res.output
    doc = json.loads(run("validate", "tests/golden/hostile/air-json/not-json.json", "--json").output)
    assert not doc["valid"] and (doc["problems"][0]["line"], doc["problems"][0]["column"]) == (4, 3)


def test_frrs_word_on_a_lab_without_configs_of_the_users_is_no_problem(monkeypatch):
    """`twin.host.check_configs` of a lab loaded without the user's FRR files: nothing for FRR to judge, no
    engine asked (it handed None to the dialects' view of the configs)."""
    from twin import host
    from twin.lab import Lab

    monkeypatch.chdir(ROOT)
    assert host.check_configs(Lab.load("topologies/aipod.yml")) == []
