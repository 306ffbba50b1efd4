"""NVUE live (issue 24): the lab of NVIDIA's samples (tests/e2e/nvue/samples.yml) brought up from
their startup.yaml files has its NVUE service as soon as `twin up` returned; `nv` inside leaf01
(through `twin exec`, as through Ansible's docker connection) makes the samples' day-2 change, a
new segment (VLAN 30 -> VNI 30 in VRF RED on access port swp3, for a server cabled there), that
then carries traffic; the NVUE REST API's flow as nvidia.nvue's httpapi plugin makes it, from
`requests` and from an Ansible playbook over `twin inventory --format nvue`; a revision that cannot
apply (refused, or failing half way) ends apply_fail and leaves the lab as it was; hostile input
and a wrong password change nothing; a file of nv commands is planned and applied as a change; and
after `twin down` nothing of the service is left (process, port, socket). One lab for the module.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
import yaml

from tests.e2e.conftest import ROOT, leftovers, twin_cli
from tests.unit.test_nvue_revisions import applies_at_once
from twin import verify
from twin.base import wait
from twin.change import load_change
from twin.lab import Lab
from twin.lifecycle import daemon, locks
from twin.nvue import service as nvue_service

pytestmark = pytest.mark.e2e

NAME = "t-nvue-live"
TOPOLOGY = ROOT / "tests/e2e/nvue/samples.yml"
CABLED = ROOT / "tests/e2e/nvue/samples-cabled.yml"
SAMPLES = ROOT / "tests/golden/interop/nvue/samples"
DAY2 = ROOT / "tests/e2e/nvue/day2.nv"
PLAYBOOK = ROOT / "tests/e2e/ansible/nvue_api.yml"


@pytest.fixture(scope="module")
def lab(runtime, node_image):
    p = twin_cli("up", str(TOPOLOGY), "--name", NAME, "--configs", str(SAMPLES), "--image", node_image)
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        yield Lab.open(NAME)
    finally:
        twin_cli("down", NAME)
    assert leftovers(runtime, NAME) == []


@pytest.fixture(scope="module")
def api(lab):
    """leaf01's REST API: its base URL and a session with the lab's credentials (the lab's certificate
    verified: it names 127.0.0.1)."""
    rec = nvue_service.require(lab.dir, NAME)
    s = requests.Session()
    s.auth = (nvue_service.USER, nvue_service.password(lab.dir))
    s.verify, s.trust_env = str(nvue_service.root(lab.dir) / "cert.pem"), False
    return f"https://127.0.0.1:{rec['listeners']['leaf01']['port']}/nvue_v1", s


def nv(*words: str, node: str = "leaf01") -> subprocess.CompletedProcess:
    return twin_cli("exec", NAME, node, "--", "nv", *words)


def kernel_addresses(lab: Lab, dev: str = "br30", ns: str = "red") -> str:
    return lab.node("leaf01").check(["ip", "-n", ns, "-o", "addr", "show", "dev", dev]).stdout


def revision(base: str, s: requests.Session, path: str, patch: dict) -> tuple[str, dict]:
    """The flow of nvidia.nvue's httpapi plugin: create a revision, PATCH it, apply it with
    auto-prompt, poll it until it is done; returns its id and its last state."""
    r = s.post(f"{base}/revision")
    assert r.status_code == 200, r.text
    rid = next(iter(r.json()))
    r = s.patch(f"{base}/{path}", params={"rev": rid}, json=patch)
    assert r.status_code == 200, r.text
    at = f"{base}/revision/{quote(rid, safe='')}"
    r = s.patch(at, json={"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
    assert r.status_code == 200 and r.json()["state"] in ("apply", "applied"), r.text
    doc: dict = {}

    def done() -> list[str]:
        doc.update(s.get(at).json())
        return [] if doc["state"] not in ("apply", "pending") else [f"revision {rid} is {doc['state']}"]

    wait.until(done, 120, "the revision to be applied", first=0.2, cap=1.0)
    return rid, doc


def test_the_service_is_there_once_up_returned_and_status_says_where(lab):
    st = json.loads(twin_cli("status", NAME, "--json").stdout)
    svc = st["nvue"]
    assert svc["running"] and svc["answers"], svc
    assert sorted(svc["listeners"]) == ["dpu1", "leaf01", "spine01", "spine02"]  # every FRR node
    for ls in svc["listeners"].values():
        assert Path(ls["socket"]).is_socket() and 1024 <= ls["port"] < 65536
    assert (nvue_service.root(lab.dir) / "password").stat().st_mode & 0o777 == 0o600
    assert "NVUE service (pid" in twin_cli("status", NAME).stdout
    assert nv("show", "system", "hostname", node="dpu1").stdout.strip() == "dpu1"
    # stopped (a crash), status says so; `twin up` of the same files starts it again
    assert nvue_service.stop(lab.dir)
    down = twin_cli("status", NAME)
    assert down.returncode == 1 and "NVUE service: not running" in down.stdout, down.stdout
    p = nv("config", "show")
    assert p.returncode == 1 and "no NVUE service answers on /run/nvue/nvue.sock" in p.stderr
    t0 = time.monotonic()
    again = twin_cli("up", str(TOPOLOGY), "--name", NAME, "--configs", str(SAMPLES))
    assert again.returncode == 0 and "already up" in again.stderr, again.stderr
    print(f"twin up of the lab that is up, starting its NVUE service: {time.monotonic() - t0:.1f}s")
    assert json.loads(twin_cli("status", NAME, "--json").stdout)["nvue"]["answers"]


def test_nv_sets_a_new_segment_and_applies_it_and_it_carries_traffic(lab):
    cabled = twin_cli("apply", NAME, str(CABLED), "--no-wait")  # server05 cabled to leaf01:swp3
    assert cabled.returncode == 0 and "which NVUE puts in no VLAN" in cabled.stdout, cabled.stdout + cabled.stderr
    lines = [ln.split()[2:] for ln in DAY2.read_text().splitlines() if ln.startswith("nv set") and "swp5-8" not in ln]
    assert len(lines) == 9
    for words in lines:  # what `twin exec` runs, without a twin process per line
        p = lab.node("leaf01").run(["nv", "set", *words])
        assert p.rc == 0, f"nv set {' '.join(words)}: {p.stderr}"
    diff = nv("config", "diff")
    assert diff.returncode == 0 and "access: 30" in diff.stdout and "vlan30:" in diff.stdout
    t0 = time.monotonic()
    applied = nv("config", "apply", "-y", "--wait")  # the pings below need the fabric converged
    assert applied.returncode == 0 and "applied [rev_id: changeset/cumulus/" in applied.stdout, applied.stderr
    assert ", converged in " in applied.stdout, applied.stdout
    print(f"nv config apply -y --wait: {time.monotonic() - t0:.1f}s")
    assert nv("config", "diff").stdout == ""
    shown = json.loads(nv("show", "interface", "vlan30", "-o", "json").stdout)
    assert shown["link"]["oper-status"] == "up" and "10.1.30.1/24" in shown["ip"]["address"]
    assert shown["ip"]["vrf"] == "RED" and shown["twin"] == {"device": "br30", "namespace": "red"}
    assert json.loads(nv("show", "evpn", "vni", "30", "-o", "json").stdout)["vrf"] == "RED"
    assert (
        yaml.safe_load(nv("show", "vrf", "default", "router", "bgp", "neighbor").stdout)["swp51"]["state"]
        == "established"
    )
    for far in ("10.1.10.101", "10.1.10.103"):  # server01 on leaf01, server03 behind dpu1
        p = lab.node("server05").run(["ping", "-c", "3", "-i", "0.2", "-W", "1", far])
        assert p.rc == 0 and " 0% packet loss" in p.stdout, p.stdout
    report = verify.run(lab, only=["traffic"])
    assert report.passed and any("server05" in c.name for c in report.checks), [str(c) for c in report.failures()]


def test_the_rest_flow_of_nvidia_nvue_applies_a_revision(lab, api):
    base, s = api
    rid, doc = revision(base, s, "interface/vlan30/ip/address", {"10.1.30.3/24": {}})
    assert doc["state"] == "applied" and doc["transition"]["issue"] == {}, doc
    assert (
        "10.1.30.3/24"
        in s.get(f"{base}/interface/vlan30/ip/address", params={"rev": "applied", "filled": "false"}).json()
    )
    assert "10.1.30.3/24" in kernel_addresses(lab)
    assert "10.1.30.3/24" in s.get(f"{base}/interface/vlan30").json()["ip"]["address"]  # operational
    assert s.patch(f"{base}/revision/applied", json={"state": "save"}).status_code == 200
    assert "10.1.30.3/24" in s.get(f"{base}/interface/vlan30/ip/address", params={"rev": "startup"}).json()


def test_an_ansible_playbook_drives_the_same_flow(lab, tmp_path):
    inv = twin_cli("inventory", NAME, "--format", "nvue", "-o", str(tmp_path))
    assert inv.returncode == 0, inv.stderr
    hosts = yaml.safe_load((tmp_path / "nvue.yml").read_text())["all"]["children"]["nvue"]["hosts"]
    assert sorted(hosts) == ["dpu1", "leaf01"] and hosts["leaf01"]["ansible_network_os"] == "nvidia.nvue.httpapi"
    assert (tmp_path / "nvue.yml").stat().st_mode & 0o777 == 0o600
    env = {
        **os.environ,
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_HOME": str(tmp_path / "ah"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "at"),
    }
    patch = json.dumps({"nv_path": "interface/vlan30/ip/address", "nv_patch": {"10.1.30.4/24": {}}})
    p = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(tmp_path / "nvue.yml"),
            str(PLAYBOOK),
            "-l",
            "leaf01",
            "-e",
            patch,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert p.returncode == 0 and "leaf01                     : ok=7" in p.stdout, p.stdout + p.stderr
    assert "10.1.30.4/24" in kernel_addresses(lab)
    # and `nv` itself through the inventory's docker connection
    assert twin_cli("inventory", NAME, "-o", str(tmp_path), "--connection", "docker").returncode == 0
    p = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible"),
            "-i",
            str(tmp_path / "inventory.yml"),
            "leaf01",
            "-m",
            "ansible.builtin.command",
            "-a",
            "nv show interface vlan30 ip address -o json",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert p.returncode == 0 and "10.1.30.4/24" in p.stdout, p.stdout + p.stderr


def test_a_revision_that_cannot_apply_ends_apply_fail_and_leaves_the_lab_as_it_was(lab, api):
    base, s = api
    files = {f: (lab.dir / "leaf01" / f).read_text() for f in ("startup.yaml", "frr.conf", "interfaces.sh")}
    rid, doc = revision(base, s, "interface/swp99", {"link": {"state": "up"}})  # leaf01 has no swp99
    assert doc["state"] == "apply_fail"
    assert any("interface.swp99: leaf01 has no port swp99" in i["message"] for i in doc["transition"]["issue"].values())
    assert {f: (lab.dir / "leaf01" / f).read_text() for f in files} == files
    # failing half way: an address the revision adds is on the bridge already, so the kernel step fails
    lab.node("leaf01").check(["ip", "-n", "red", "addr", "add", "10.1.30.9/24", "dev", "br30"])
    try:
        rid, doc = revision(base, s, "interface/vlan30/ip/address", {"10.1.30.9/24": {}})
    finally:
        lab.node("leaf01").run(["ip", "-n", "red", "addr", "del", "10.1.30.9/24", "dev", "br30"])
    issues = [i["message"] for i in doc["transition"]["issue"].values()]
    assert doc["state"] == "apply_fail" and any(
        "failed in stage kernel (add)" in m and "rolled back" in m for m in issues
    ), doc
    assert {f: (lab.dir / "leaf01" / f).read_text() for f in files} == files
    assert "10.1.30.9" not in lab.node("leaf01").vtysh("show running-config")
    assert twin_cli("status", NAME).returncode == 0


def test_a_revision_raced_by_a_second_apply_an_edit_and_a_node_fault_has_one_winner(lab, api):
    """Issue 43: two automations apply one revision at once: one gets 200, the other 409 "is being
    applied", and it is applied once; an edit of it meanwhile gets 409 and is not in what was
    applied; a revision applied while a node fault holds the lab ends apply_fail naming the fault,
    and leaf01 runs what it ran before (its files, its kernel)."""
    base, s = api
    apply = {"state": "apply", "auto-prompt": {"ays": "ays_yes"}}
    rid = next(iter(s.post(f"{base}/revision").json()))
    at = f"{base}/revision/{quote(rid, safe='')}"
    assert (
        s.patch(f"{base}/interface/vlan30/ip/address", params={"rev": rid}, json={"10.1.30.21/24": {}}).status_code
        == 200
    )
    answers = applies_at_once(at, s)
    assert [r.status_code for r in answers] == [200, 409], [r.text for r in answers]
    assert "is being applied: it cannot be changed or applied again" in answers[1].json()["detail"]
    late = s.patch(f"{base}/interface/vlan30/ip/address", params={"rev": rid}, json={"10.1.30.22/24": {}})
    assert late.status_code == 409 and (
        "is being applied" in late.json()["detail"] or "cannot be modified further" in late.json()["detail"]
    ), late.text
    wait.until(
        lambda: [] if s.get(at).json()["state"] == "applied" else ["still applying"], 120, "applied", first=0.2, cap=1.0
    )
    addresses = kernel_addresses(lab)
    assert "10.1.30.21/24" in addresses and "10.1.30.22/24" not in addresses
    assert sum(h["source"].endswith(rid) for h in lab.state.history) == 1, lab.state.history[-3:]
    # a node fault holds the lab: the revision is refused before anything of it runs
    files = {f: (lab.dir / "leaf01" / f).read_text() for f in ("startup.yaml", "frr.conf", "interfaces.sh")}
    rid = next(iter(s.post(f"{base}/revision").json()))
    at = f"{base}/revision/{quote(rid, safe='')}"
    s.patch(f"{base}/interface/vlan30/ip/address", params={"rev": rid}, json={"10.1.30.23/24": {}})
    ctx = lab.context()
    with ctx.writing(f"twin fault node-stop {NAME} spine02"):
        stopped = load_change(ctx, "fault:node-stop:spine02").apply(ctx)
        assert stopped.kind == "node-stop" and not ctx.container("spine02").running()
        assert s.patch(at, json=apply).status_code == 200
        doc: dict = {}
        wait.until(
            lambda: [] if doc.update(s.get(at).json()) or doc["state"] != "apply" else ["applying"],
            60,
            "the revision done",
            first=0.1,
            cap=0.5,
        )
    issues = [i["message"] for i in doc["transition"]["issue"].values()]
    assert doc["state"] == "apply_fail" and len(issues) == 1, doc
    assert issues[0].startswith(f"lab '{NAME}' is busy: twin fault node-stop {NAME} spine02 (pid {os.getpid()}")
    assert {f: (lab.dir / "leaf01" / f).read_text() for f in files} == files
    assert "10.1.30.23/24" not in kernel_addresses(lab)
    assert twin_cli("fault", "node-start", NAME, "spine02").returncode == 0
    lab.wait()


def test_hostile_input_and_a_wrong_password_change_nothing(lab, api):
    base, s = api
    before = s.get(f"{base}/", params={"rev": "applied"}).json()
    rid = next(iter(s.post(f"{base}/revision").json()))
    for body, status in (
        (b"{nope", 400),
        (b"[" * 2000 + b"]" * 2000, 400),
        (b'{"link": {"state": 7}}', 400),
        (b"x" * (2 << 20), 413),
    ):
        r = s.patch(
            f"{base}/interface/swp1", params={"rev": rid}, data=body, headers={"Content-Type": "application/json"}
        )
        assert r.status_code == status and r.json()["status"] == status and r.json()["detail"], r.text
    assert s.get(f"{base}/frob", params={"rev": rid}).status_code == 404
    anon = requests.Session()
    anon.verify, anon.trust_env = s.verify, False
    for auth in (None, ("cumulus", "not-the-password")):
        r = anon.patch(
            f"{base}/revision/{quote(rid, safe='')}",
            auth=auth,
            json={"state": "apply", "auto-prompt": {"ays": "ays_yes"}},
        )
        assert r.status_code == 401
    assert s.get(f"{base}/revision/{quote(rid, safe='')}").json()["state"] == "pending"
    for words, said in (
        (["set", "interface", "swp1", "link", "state", "sideways"], "is not one of up, down"),
        (["set", "interface", "swp1-70000", "link", "state", "up"], "a range names at most"),
        (["config", "patch", "/etc/hostname"], "a startup.yaml is a list of documents"),
        (["show", "vrf", "NOPE", "router", "bgp", "neighbor"], "the node has no such VRF"),
    ):
        p = nv(*words)
        assert p.returncode == 1 and said in p.stderr and "Traceback" not in p.stderr, p.stderr
    nv("config", "detach")
    assert nv("set", "interface", "swp99", "link", "state", "up").returncode == 0  # NVUE's tree has a place
    p = nv("config", "apply", "-y")  # ... leaf01 has no port
    assert p.returncode == 1 and "apply_fail" in p.stdout and "interface.swp99: leaf01 has no port swp99" in p.stderr
    nv("config", "detach")
    assert s.get(f"{base}/", params={"rev": "applied"}).json() == before
    assert "Traceback" not in (nvue_service.root(lab.dir) / "service.log").read_text()


def test_a_file_of_nv_commands_is_planned_and_applied_as_a_change(lab, tmp_path):
    f = tmp_path / "more.nv"
    f.write_text(
        "# one more address on vlan30\nnv set interface vlan30 ip address 10.1.30.5/24\nnv config diff\n"
        "nv config apply -y\n"
    )
    plan = twin_cli("plan", NAME, f"nv:leaf01:{f}")
    assert plan.returncode == 0 and "leaf01: set interface.vlan30.ip.address" in plan.stdout, plan.stdout + plan.stderr
    assert "addr add 10.1.30.5/24 dev br30" in plan.stdout
    p = twin_cli("apply", NAME, f"nv:leaf01:{f}", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["converged"], p.stdout + p.stderr
    assert "10.1.30.5/24" in kernel_addresses(lab)
    bad = twin_cli("plan", NAME, f"nv:spine01:{f}")
    assert bad.returncode == 1 and "spine01 runs twin's rendering, not NVUE" in bad.stderr
    g = tmp_path / "drop.nv"
    g.write_text("nv unset interface vlan30 ip address 10.1.30.5/24\nnv config apply\n")
    r = twin_cli("rehearse", NAME, f"nv:leaf01:{g}", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["passed"], r.stdout[-3000:] + r.stderr
    assert "10.1.30.5/24" not in kernel_addresses(lab)


INJECTION = "leaf01\nip route 192.0.2.0/24 blackhole"  # issue 38: a host name that was a line of frr.conf


def test_the_injection_is_refused_through_every_door_and_frr_conf_stays(lab, api, runtime, tmp_path):
    """The REST API (400 at PATCH time), `nv` inside the node (exit 1, `set` and `config patch`) and a
    startup.yaml (`twin validate` and `twin up` refuse it with file, line and path, nothing made)."""
    base, s = api
    frr = (lab.dir / "leaf01" / "frr.conf").read_text()
    rid = next(iter(s.post(f"{base}/revision").json()))
    r = s.patch(f"{base}/system", params={"rev": rid}, json={"hostname": INJECTION})
    assert (
        r.status_code == 400
        and "system.hostname: 'leaf01\\nip route 192.0.2.0/24 blackhole' is not a host name (RFC 1123)"
        in r.json()["detail"]
    ), r.text
    node = lab.node("leaf01")
    p = node.run(["nv", "set", "system", "hostname", INJECTION])
    assert p.rc == 1 and p.stderr.startswith("Error: system.hostname: 'leaf01\\nip route"), p.stderr
    patch = "printf '%s\\n' '- set:' '    system:' '      hostname: \"x\\nrouter bgp 1\"' > /tmp/p.yaml"
    node.check(["sh", "-c", patch])
    p = node.run(["nv", "config", "patch", "/tmp/p.yaml"])
    assert p.rc == 1 and "system.hostname: 'x\\nrouter bgp 1' is not a host name" in p.stderr, p.stderr
    assert nv("config", "diff").stdout == ""
    assert (lab.dir / "leaf01" / "frr.conf").read_text() == frr
    assert "192.0.2.0" not in node.vtysh("show running-config") and "hostname leaf01\n" in frr
    configs = tmp_path / "configs"
    for n in ("leaf01", "dpu1"):
        (configs / n).mkdir(parents=True)
        text = (SAMPLES / n / "startup.yaml").read_text()
        (configs / n / "startup.yaml").write_text(
            text.replace("hostname: leaf01", 'hostname: "leaf01\\nip route 192.0.2.0/24 blackhole"', 1)
        )
    f = configs / "leaf01" / "startup.yaml"
    line = next(i for i, t in enumerate(f.read_text().splitlines(), 1) if "hostname:" in t)
    for argv in (
        ["validate", str(TOPOLOGY), "--configs", str(configs)],
        ["up", str(TOPOLOGY), "--name", "t-nvue-inj", "--configs", str(configs)],
    ):
        p = twin_cli(*argv)
        assert p.returncode == 1 and f"{f}:{line}: system.hostname: 'leaf01\\nip route" in p.stdout + p.stderr, (
            p.stdout + p.stderr
        )
    assert leftovers(runtime, "t-nvue-inj") == []


def inet(lab: Lab, node: str = "leaf01", dev: str = "br30", ns: str = "red") -> set[str]:
    return {
        w[w.index("inet") + 1]
        for line in lab.node(node).check(["ip", "-n", ns, "-o", "-4", "addr", "show", "dev", dev]).stdout.splitlines()
        if "inet" in (w := line.split())
    }


def test_a_node_a_fault_starts_again_keeps_what_its_nvue_runs(lab):
    """Issue 34: leaf01 restarted by `twin fault node-restart`, then stopped and started again (the undo
    of node-stop), comes back with the plane of its applied startup.yaml: VLAN 30 that `nv` added, with
    its SVI's own address and the ones the REST API and Ansible added (twin's rendering of the topology
    has its gateway alone), and the lab passes verify."""
    before = inet(lab)
    assert {"10.1.30.1/24", "10.1.30.2/24", "10.1.30.3/24", "10.1.30.4/24"} <= before, before
    for words in (["node-restart", NAME, "leaf01"], ["node-stop", NAME, "leaf01"], ["node-start", NAME, "leaf01"]):
        p = twin_cli("fault", *words)
        assert p.returncode == 0, p.stdout + p.stderr
        if words[0] == "node-stop":
            continue
        lab.wait()
        assert inet(lab) == before, f"after {words[0]}: {inet(lab)}"
        assert json.loads(nv("show", "interface", "vlan30", "-o", "json").stdout)["link"]["oper-status"] == "up"
        report = verify.run(lab)
        assert report.passed, [str(c) for c in report.failures()]


# what the proof takes from the NVUE nodes' own plane and frr.conf (the whole proof of the lab: `make prove`)
NVUE_ELEMENTS = [
    "loopback leaf01",
    "loopback dpu1",
    "gateway-* leaf01 br30",
    "l2vni-device leaf01 30",
    "arp-suppression leaf01 vxlan10",
    "membership leaf01:swp3",
    "mtu leaf01 br30",
]


@pytest.mark.prove  # a slow proof: `make prove` runs it, `make test` does not
def test_the_proof_breaks_and_puts_back_what_the_nvue_nodes_run(lab):
    """Issue 34: `--prove` on the NVUE lab: its elements on leaf01 and dpu1 come from what they run
    (their NVUE's plane: VLAN 30 that `nv` added; the frr.conf NVUE renders, which advertises the
    loopback by `redistribute connected`), each is caught, and put back to what they run."""
    before = inet(lab)
    p = twin_cli(
        "verify", NAME, "--prove", *[w for e in NVUE_ELEMENTS for w in ("--element", e)], "--json", timeout=900
    )
    proof = json.loads(p.stdout)
    assert p.returncode == 0 and proof["caught"] == proof["proved"] == 8, p.stdout[-3000:] + p.stderr
    whats = {o["id"]: o["what"] for o in proof["outcomes"]}
    assert whats["loopback leaf01"] == "redistribute connected (10.10.10.1/32) on leaf01"
    assert all(o["caught"] and o["restored"] for o in proof["outcomes"])
    assert inet(lab) == before, "put back to what leaf01 runs: its NVUE's addresses too"
    report = verify.run(lab)
    assert report.passed, [str(c) for c in report.failures()]


# leaf01's and dpu1's NVUE beyond twin's design, as a user types it: route targets of their own on VRF RED
# (both ends, so they still agree), and on leaf01 swp52 in a peer group of its own, EVPN activated there
OWN_RTS = [
    "vrf RED router bgp route-import from-evpn route-target 65000:4001",
    "vrf RED router bgp route-export to-evpn route-target 65000:4001",
]
OWN_GROUP = [
    "vrf default router bgp peer-group spine2 remote-as external",
    "vrf default router bgp peer-group spine2 address-family l2vpn-evpn enable on",
    "vrf default router bgp neighbor swp52 peer-group spine2",
]
FRR_ELEMENTS = ["rt-import leaf01 4001", "rt-export dpu1 4001", "evpn-activate leaf01 spine2", "session leaf01:swp52"]


@pytest.mark.prove  # a slow proof: `make prove` runs it, `make test` does not
def test_the_proof_takes_the_frr_elements_of_the_revision_a_node_applied(lab):
    """Issue 34b: leaf01 and dpu1 run FRR lines twin's design has not (nv-set route targets, a peer group);
    the proof's FRR elements are those of the frr.conf their applied revision renders: the set route
    targets replaced (not added to, which would break nothing), the new group's EVPN activation an element
    of its own; each is caught and put back to exactly what they run, and the lab verifies clean after."""
    for node, lines in (("leaf01", OWN_RTS + OWN_GROUP), ("dpu1", OWN_RTS)):
        for line in lines:
            p = lab.node(node).run(["nv", "set", *line.split()])
            assert p.rc == 0, f"{node}: nv set {line}: {p.stderr}"
        p = nv("config", "apply", "-y", *(["--wait"] if node == "dpu1" else []), node=node)  # both sides set first
        assert p.returncode == 0 and "applied [rev_id:" in p.stdout, p.stdout + p.stderr
    lab.wait()
    running = lab.node("leaf01").vtysh("show running-config")
    assert "route-target import 65000:4001" in running and "neighbor swp52 interface peer-group spine2" in running
    t0 = time.monotonic()
    p = twin_cli("verify", NAME, "--prove", *[w for e in FRR_ELEMENTS for w in ("--element", e)], "--json", timeout=900)
    proof = json.loads(p.stdout)
    print(f"--prove of {len(FRR_ELEMENTS)} FRR elements of the NVUE nodes: {time.monotonic() - t0:.0f}s")
    assert p.returncode == 0 and proof["caught"] == proof["proved"] == len(FRR_ELEMENTS), p.stdout[-3000:] + p.stderr
    by = {o["id"]: o for o in proof["outcomes"]}
    assert all(o["caught"] and o["restored"] for o in by.values()), by
    assert by["rt-import leaf01 4001"]["what"] == "route-target import (65000:4001) of VNI 4001 (red) on leaf01"
    assert "no route-target import 65000:4001 / route-target import 65535:1" in by["rt-import leaf01 4001"]["broken_by"]
    assert by["evpn-activate leaf01 spine2"]["check"] == "control: bgp leaf01"
    assert lab.node("leaf01").vtysh("show running-config") == running, "put back to exactly what leaf01 runs"
    report = verify.run(lab)
    assert report.passed, [str(c) for c in report.failures()]


def test_twin_wait_waits_beside_a_revision_that_applies_and_answers(lab, api, tmp_path):
    """Issue 34b: a revision applying holds the lab shared and its node; `twin wait` is a reader: started
    while one applies (one that waits for convergence, held back by leaf01's session on spine01, shut
    behind twin's back), it waits beside it, and both answer once the session is back."""
    base, s = api
    spine01 = lab.node("spine01")
    asn = lab.fabric.nodes["spine01"].asn
    spine01.vtysh("configure terminal", f"router bgp {asn}", "neighbor swp1 shutdown")
    try:
        rid = next(iter(s.post(f"{base}/revision").json()))
        assert (
            s.patch(f"{base}/interface/vlan30/ip/address", params={"rev": rid}, json={"10.1.30.6/24": {}}).status_code
            == 200
        )
        at = f"{base}/revision/{quote(rid, safe='')}"
        r = s.patch(at, params={"wait": "true"}, json={"state": "apply", "auto-prompt": {"ays": "ays_yes"}})
        assert r.status_code == 200, r.text
        wait.until(
            lambda: [] if "revision" in locks.holder(NAME) else ["a revision holding leaf01"],
            60,
            "the revision to hold leaf01",
            first=0.1,
            cap=0.5,
        )
        err = tmp_path / "wait.err"
        with open(err, "w") as fh:
            p = subprocess.Popen(
                [sys.executable, "-m", "twin.cli", "wait", NAME, "--timeout", "240"],
                stdout=subprocess.PIPE,
                stderr=fh,
                text=True,
                env=os.environ.copy(),
                cwd=ROOT,
            )
        wait.until(
            lambda: [] if "waiting for " in err.read_text() or p.poll() is not None else ["twin wait waiting"],
            60,
            "twin wait to wait",
            first=0.2,
            cap=0.5,
        )
        assert p.poll() is None, f"twin wait ended: {p.returncode} {err.read_text()}"
        assert "revision" in locks.holder(NAME) and s.get(at).json()["state"] == "apply", "both at once"
    finally:
        spine01.vtysh("configure terminal", f"router bgp {asn}", "no neighbor swp1 shutdown")
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 0 and f"lab {NAME} has converged" in out, out + err.read_text()
    wait.until(lambda: [] if s.get(at).json()["state"] != "apply" else ["applying"], 120, "the revision")
    doc = s.get(at).json()
    assert doc["state"] == "applied" and ", converged in " in doc["transition"]["progress"], doc


def test_down_leaves_nothing_of_the_service(lab):
    rec = nvue_service.require(lab.dir, NAME)
    sock = Path(rec["listeners"]["leaf01"]["socket"])
    assert twin_cli("down", NAME).returncode == 0
    assert daemon.started(rec["pid"]) is None and not sock.exists() and not lab.dir.exists()
    locks_dir = Path(os.environ["TWIN_HOME"]) / "locks"  # its lock files too (issue 34b): the lab's, its nodes'
    assert not (locks_dir / f"{NAME}.lock").exists() and not (locks_dir / f"{NAME}.nodes").exists(), sorted(
        p.name for p in locks_dir.iterdir()
    )
    for ls in rec["listeners"].values():
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", ls["port"]), timeout=2).close()
