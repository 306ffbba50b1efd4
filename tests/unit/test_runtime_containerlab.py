"""The containerlab runtime on the exact command lines it runs: containerlab is not installable
on this machine, so its CLI is stood in for by a recorder that answers `inspect` with the
documented output shape (tests/golden/interop/clab-inspect/grouped.json, re-labelled)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.unit.engine import labelled
from twin.base.errors import TwinError
from twin.runtime import containerlab as C
from twin.runtime import registry
from twin.topology import load, mgmt

ROOT = Path(__file__).resolve().parents[2]
INSPECT = json.loads((ROOT / "tests/golden/interop/clab-inspect/grouped.json").read_text())


class FakeContainer:
    def __init__(self, node: str, pid: int):
        self.labels = {"twin.lab": "small", "twin.node": node}
        self.name, self.attrs, self.status = f"twin-small-{node}", {"State": {"Pid": pid}}, "running"

    def reload(self):
        pass

    def remove(self, force):
        self.removed = True


class FakeNetwork:
    def __init__(self, name: str, **kw):
        self.name, self.kw, self.removed = name, kw, False
        cfg = kw["ipam"]["Config"][0]
        self.attrs = {
            "Name": name,
            "Labels": kw["labels"],
            "Options": kw["options"],
            "IPAM": {"Config": [{"Subnet": cfg["Subnet"], "Gateway": cfg["Gateway"]}]},
        }

    def remove(self):
        self.removed = True


class FakeNetworks:
    """Docker's networks, as the runtime makes and removes the lab's management network."""

    def __init__(self):
        self.made: list[FakeNetwork] = []

    def list(self, filters):
        lab = filters["label"].split("=", 1)[1]
        return [n for n in self.made if not n.removed and n.attrs["Labels"]["twin.lab"] == lab]

    def create(self, name, **kw):
        self.made.append(FakeNetwork(name, **kw))
        return self.made[-1]


class FakeClient:
    """The Docker SDK as far as the runtime reads it after containerlab made the containers."""

    def __init__(self, nodes: list[str]):
        self.containers = self
        self.networks = FakeNetworks()
        self.made = [FakeContainer(n, 100 + i) for i, n in enumerate(nodes)]

    def ping(self):
        return True

    def list(self, filters, **kw):
        return [c for c in self.made if not getattr(c, "removed", False) and labelled(c.labels, filters["label"])]


def inspect_of(nodes: list[str]) -> str:
    entry = INSPECT["vlan"][0]
    return json.dumps({"small": [{**entry, "lab_name": "small", "name": f"twin-small-{n}"} for n in nodes]})


@pytest.fixture(autouse=True)
def host_files(tmp_path, monkeypatch):
    """containerlab's files on the host (/etc/hosts, /etc/ssh/ssh_config.d), here in tmp_path."""
    (tmp_path / "ssh").mkdir()
    monkeypatch.setattr(C.ContainerlabRuntime, "hosts", tmp_path / "hosts")
    monkeypatch.setattr(C.ContainerlabRuntime, "ssh_config", tmp_path / "ssh")
    return tmp_path


def test_bring_up_exports_deploys_and_inspects_then_finds_twins_containers(tmp_path, monkeypatch, host_files):
    monkeypatch.chdir(ROOT)
    fabric = mgmt.resolve(load("tests/e2e/small.yml"))  # as `twin up` chose its management network
    calls: list[list[str]] = []

    def run(cmd, **kw):
        calls.append(cmd)
        out = inspect_of(list(fabric.nodes)) if cmd[1] == "inspect" else ""
        return subprocess.CompletedProcess(cmd, 0, out, "")

    rt = C.ContainerlabRuntime(client=FakeClient(list(fabric.nodes)), run=run, binary="/usr/bin/containerlab")
    created = []
    pids = rt.bring_up(
        fabric,
        "twin-node:test",
        tmp_path,
        "netns",
        configure=lambda *a: pytest.fail("configured twice"),
        on_created=lambda: created.append(1),
    )
    topo = tmp_path / "small.clab.yml"
    assert calls == [
        ["/usr/bin/containerlab", "deploy", "-t", str(topo)],
        ["/usr/bin/containerlab", "inspect", "-t", str(topo), "--format", "json"],
    ]
    assert topo.is_file() and (tmp_path / "leaf1" / "frr.conf").is_file()
    assert set(pids) == set(fabric.nodes) and created == [1]
    (net,) = rt.client.networks.made  # twin's management network, made before the deploy: containerlab's mgmt
    assert (net.name, net.kw["internal"], net.kw["labels"]) == ("twin-small-mgmt", True, {"twin.lab": "small"})
    doc = yaml.safe_load(topo.read_text())
    assert doc["mgmt"] == {
        "network": "twin-small-mgmt",
        "ipv4-subnet": fabric.mgmt.subnet,
        "ipv4-gw": fabric.mgmt.gateway,
    }
    assert {n: x.get("mgmt-ipv4", x.get("network-mode")) for n, x in doc["topology"]["nodes"].items()} == {
        **{n: fabric.nodes[n].mgmt for n in ("spine1", "leaf1", "leaf2", "dpu1")},
        "host1": "none",
    }
    assert "twin-small-leaf1" in (host_files / "hosts").read_text()
    rt.remove_lab("small", tmp_path)
    assert calls[-1] == ["/usr/bin/containerlab", "destroy", "-t", str(topo), "--cleanup"]
    assert all(c.removed for c in rt.client.made), "what containerlab left labelled is removed too"
    assert net.removed and "twin-small" not in (host_files / "hosts").read_text()


def test_a_deploy_that_lacks_nodes_or_fails_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    fabric = load("tests/e2e/small.yml")

    def short(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 0, inspect_of(["spine1"]) if cmd[1] == "inspect" else "", "")

    rt = C.ContainerlabRuntime(client=FakeClient(["spine1"]), run=short, binary="clab")
    with pytest.raises(TwinError, match="without node"):
        rt.bring_up(fabric, "img", tmp_path, "netns", configure=lambda *a: None)

    def failing(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 1, "", "Error: permission denied")

    rt = C.ContainerlabRuntime(client=FakeClient([]), run=failing, binary="clab")
    with pytest.raises(TwinError, match="(?s)clab deploy -t .*exited 1.*permission denied"):
        rt.bring_up(fabric, "img", tmp_path, "netns", configure=lambda *a: None)


def test_without_containerlab_the_runtime_is_one_line(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(TwinError) as e:
        registry.make_runtime("containerlab")
    assert str(e.value) == "containerlab is not installed; twin's own runtime (--runtime docker) needs nothing"
    with pytest.raises(TwinError, match="unknown runtime 'podman'; runtimes: docker, containerlab"):
        registry.make_runtime("podman")


def test_a_runtime_made_for_removing_brings_up_no_lab_without_containerlab(tmp_path, monkeypatch):
    """A runtime made to take a lab down on a host without containerlab (`removing`: no binary), asked
    to bring one up, says containerlab is missing, in one line, and runs nothing (it ran a None command)."""
    monkeypatch.chdir(ROOT)
    fabric = load("tests/e2e/small.yml")
    monkeypatch.setattr("shutil.which", lambda name: None)
    rt = C.ContainerlabRuntime(client=FakeClient([]), run=lambda *a, **k: pytest.fail(f"ran {a}"), removing=True)
    with pytest.raises(TwinError) as e:
        rt.bring_up(fabric, "img", tmp_path, "netns", configure=lambda *a: None)
    assert str(e.value) == "containerlab is not installed; twin's own runtime (--runtime docker) needs nothing"


def test_a_containerlab_lab_is_removed_without_containerlab(tmp_path, monkeypatch):
    """containerlab uninstalled since `twin up --runtime containerlab`: `down` still removes the
    labelled containers and what containerlab wrote for the lab on the host, and runs nothing."""
    monkeypatch.setattr("shutil.which", lambda name: None)
    (tmp_path / "small.clab.yml").write_text("name: small\n")
    mine = "###### CLAB-small-START ######\n10.0.0.2\tclab-small-leaf1\n###### CLAB-small-END ######\n"
    other = "###### CLAB-smaller-START ######\n10.0.0.3\tx\n###### CLAB-smaller-END ######\n"
    (tmp_path / "hosts").write_text("127.0.0.1\tlocalhost\n" + mine + other)
    (tmp_path / "ssh" / "clab-small.conf").write_text("Host clab-small-*\n")
    (tmp_path / "ssh" / "clab-smaller.conf").write_text("Host clab-smaller-*\n")
    rt = C.ContainerlabRuntime(
        client=FakeClient(["spine1", "leaf1"]), run=lambda *a, **k: pytest.fail(f"ran {a}"), removing=True
    )
    assert rt.binary is None
    assert rt.remove_lab("small", tmp_path) == ["twin-small-spine1", "twin-small-leaf1"]
    assert all(c.removed for c in rt.client.made)
    assert (tmp_path / "hosts").read_text() == "127.0.0.1\tlocalhost\n" + other, "another lab's block stays"
    assert sorted(f.name for f in (tmp_path / "ssh").iterdir()) == ["clab-smaller.conf"]
    with pytest.raises(TwinError, match="lab name"):
        rt.remove_host_files("../../etc/passwd")
    assert isinstance(registry.make_runtime("containerlab", removing=True), C.ContainerlabRuntime)
