"""NVUE live, without a lab: the REST API's and `nv`'s pure parts (`twin.nvue.api`, `.cli`),
a file of nv commands as a change, and the service's app (`twin.nvue.nvued`) served on a TLS port and a
unix socket over a lab directory as `twin up --configs` leaves it, driven by `requests` and by the
node's own `nv` client: revisions made, patched, diffed and read back, each node on its own, and
hostile input (bad JSON, wrong types, deep or huge bodies, unknown paths, no or a wrong password)
answered with a clear error and nothing changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
import requests

from tests.unit.test_nvue_change import SAMPLES, running_lab
from twin import nvue
from twin.base.errors import TopologyError
from twin.lifecycle.service import Listener, Service
from twin.nvue import api, cli
from twin.nvue import client as client_module
from twin.nvue import service as nvue_service
from twin.nvue.api import State
from twin.nvue.change import nv_file
from twin.nvue.nvued import nv as nv_run
from twin.nvue.nvued.app import make_app, problem_body
from twin.nvue.nvued.engine import Engine
from twin.nvue.nvued.serve import MAX_BODY, _bind

CLIENT = Path(client_module.__file__)


# --- the REST API's pure parts ---------------------------------------------------------------------
def test_paths_are_decoded_segment_by_segment_and_checked():
    assert api.path_of(b"/nvue_v1/interface/swp3") == ("interface", "swp3")
    assert api.path_of(b"/nvue_v1/") == () == api.path_of(b"/nvue_v1")
    assert api.path_of(b"/nvue_v1/revision/changeset%2Fcumulus%2F2026") == ("revision", "changeset/cumulus/2026")
    assert api.path_of(b"/nvue_v1/interface/ip%20address") == ("interface", "ip address")
    for bad, why in [
        (b"/other", "under /nvue_v1"),
        (b"/nvue_v1/a//b", "1-255 printable"),
        (b"/nvue_v1/%0a", "printable"),
        (b"/nvue_v1/%ff", "UTF-8"),
        (b"/nvue_v1" + b"/x" * 65, "at most 64 segments"),
    ]:
        with pytest.raises(ValueError, match=why):
            api.path_of(bad)
    assert api.known(("interface", "swp1", "link", "state")) == ""
    assert api.known(("mlag", "anything")) == ""  # stored, not emulated
    assert api.known(("interface", "swp1", "frob")) == "interface.swp1.frob: no such place in NVUE's object tree"


@pytest.mark.parametrize(
    "raw, why",
    [
        (b"", "is empty"),
        (b"{", "not JSON: Expecting property name"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"a": NaN}', "NaN is not a value"),
        (b"[" * 5000 + b"]" * 5000, "deeper than 64"),
        (json.dumps({"a": [0] * 100_001}).encode(), "more than 100000 values"),
        (json.dumps({"a": "x" * 5000}).encode(), "at most 4096 characters"),
        (json.dumps({"": 1}).encode(), "a key is 1-4096"),
        (json.dumps({"a\nb": 1}).encode(), "printable"),
    ],
)
def test_hostile_json_is_refused_with_what_is_wrong(raw, why):
    with pytest.raises(ValueError, match=why):
        api.parse_json(raw)


def test_a_patch_is_a_json_merge_patch_at_its_path():
    tree = {"interface": {"swp1": {"link": {"state": "up"}, "type": "swp"}}}
    api.merge_patch(tree, ("interface", "swp1"), {"link": {"state": "down"}, "type": None})
    assert tree == {"interface": {"swp1": {"link": {"state": "down"}}}}
    api.merge_patch(tree, ("interface", "vlan30", "ip", "address"), {"10.1.30.2/24": {}})
    assert tree["interface"]["vlan30"] == {"ip": {"address": {"10.1.30.2/24": {}}}}
    api.merge_patch(tree, ("interface", "vlan30"), None)
    assert "vlan30" not in tree["interface"]
    with pytest.raises(ValueError, match="root takes an object"):
        api.merge_patch(tree, (), [1])
    api.delete_at(tree, ("interface", "swp1", "link"))
    assert tree == {"interface": {"swp1": {}}}
    assert api.delete_at(tree, ()) == {}


# --- nv's words --------------------------------------------------------------------------------------
def test_nv_words_parse_into_commands_or_a_usage_error():
    assert cli.parse(["set", "interface", "swp1", "link", "state", "up"]).words[-1] == "up"
    assert cli.parse(["config", "apply", "-y"]) == cli.Command("apply", yes=True)
    assert cli.parse(["config", "apply", "--assume-yes"]).yes
    assert cli.parse(["show", "interface", "vlan30", "-o", "json"]) == cli.Command(
        "show", ("interface", "vlan30"), "json"
    )
    assert cli.parse(["config", "patch", "f.yaml"]).file == "f.yaml"
    assert cli.parse([]).verb == "help" == cli.parse(["-h"]).verb
    for argv, why in [
        (["frob"], "unknown command 'frob'"),
        (["config", "frob"], "unknown command 'nv config frob'"),
        (["set"], "usage: nv set PATH VALUE"),
        (["config", "show", "-o", "xml"], "json or yaml"),
        (["config", "diff", "-q"], "no such option"),
        (["config", "patch"], "usage"),
        (["config", "save", "now"], "takes no more words"),
        (["set", "a\x00"], "printable"),
        (["set"] + ["x"] * 200, "at most 128 words"),
        ("set x", "list of text"),
    ]:
        with pytest.raises(ValueError, match=why):
            cli.parse(argv)


def test_nv_set_and_unset_edit_a_tree_checked_against_nvue():
    tree = nvue.read(SAMPLES / "leaf01" / "startup.yaml").tree
    new = cli.edit(tree, cli.parse("set interface swp5-7,swp9 link state down".split()))
    assert [n for n, i in new["interface"].items() if i.get("link", {}).get("state") == "down"] == [
        "swp5",
        "swp6",
        "swp7",
        "swp9",
    ]
    assert new["interface"]["swp1"] == tree["interface"]["swp1"] and "swp5" not in tree["interface"]
    kept = cli.edit(tree, cli.parse("set interface swp1".split()))  # an object named: what it holds stays
    assert kept["interface"]["swp1"] == tree["interface"]["swp1"]
    on = cli.edit(tree, cli.parse("set bridge domain br_default vlan 30 vni 30".split()))
    assert on["bridge"]["domain"]["br_default"]["vlan"]["30"] == {"vni": {"30": {}}}
    gone = cli.edit(tree, cli.parse("unset interface vlan10 ip vrr address 10.1.10.1/24".split()))
    assert gone["interface"]["vlan10"]["ip"]["vrr"]["address"] == {}
    with pytest.raises(TopologyError) as e:
        cli.edit(tree, cli.parse("set interface swp1 bridge domain br_default access x".split()))
    assert str(e.value.problems[0]).endswith("interface.swp1.bridge.domain.br_default.access: 'x' is not a VLAN id")
    for words, why in [
        ("set interface swp1 frob on", "interface.swp1.frob: no such place"),
        ("set interface swp1-99999 link state up", "a range names at most 1024"),
        ("unset routing table", "routing: no such place"),
    ]:
        with pytest.raises(ValueError, match=why):
            cli.edit(tree, cli.parse(words.split()))


def test_nv_config_patch_and_replace_take_a_startup_yaml_or_a_bare_mapping():
    tree = nvue.read(SAMPLES / "leaf01" / "startup.yaml").tree
    doc = b"- set:\n    interface:\n      swp3:\n        link:\n          state: down\n- unset:\n    evpn:\n"
    new = cli.edit(tree, cli.Command("patch", file="p.yaml"), doc)
    assert new["interface"]["swp3"] == {"link": {"state": "down"}} and "evpn" not in new
    bare = cli.edit(tree, cli.Command("replace", file="r.yaml"), b"system:\n  hostname: x\n")
    assert bare == {"system": {"hostname": "x"}}
    for data, why in [
        (b"- frob: {}\n", "each document is one of"),
        (b"a: [\n", "not valid YAML"),
        (b"a: &x 1\nb: *x\n", "anchors and aliases"),
        (b"interface: {swp1: {frob: 1}}\n", "frob"),
    ]:
        with pytest.raises(TopologyError, match=why):
            cli.edit(tree, cli.Command("patch", file="p.yaml"), data)


def test_a_file_of_nv_commands_is_the_change_its_last_apply_applies(tmp_path):
    tree = nvue.read(SAMPLES / "leaf01" / "startup.yaml").tree
    text = (Path(__file__).resolve().parents[2] / "tests/e2e/nvue/day2.nv").read_bytes()
    out = nv_file._run(text, "day2.nv", tree)
    assert out["interface"]["vlan30"]["ip"]["vrf"] == "RED" and out["interface"]["swp3"]["bridge"]
    assert "swp5" in out["interface"]  # the second apply's ranges
    with pytest.raises(TopologyError) as e:
        nv_file._run(b"nv set interface swp3 link state down\nnv config apply\nnv set system hostname x\n", "f", tree)
    assert e.value.problems[0].line == 3 and "would stay pending" in e.value.problems[0].message
    detached = nv_file._run(
        b"nv set system hostname x\nnv config detach\nnv set interface swp1 link state down\n", "f", tree
    )
    assert detached["system"]["hostname"] == "leaf01" and detached["interface"]["swp1"]["link"]["state"] == "down"
    with pytest.raises(TopologyError) as e:
        nv_file._run(b"ls -l\nnv set interface swp1 frob 1\nnv 'unbalanced\n", "f", tree)
    assert [(p.line, p.message.split(":")[0]) for p in e.value.problems] == [
        (1, "each line is an nv command (nv set ..., nv config apply, ...)"),
        (3, "No closing quotation"),
    ]
    with pytest.raises(TopologyError) as e:  # lines that are commands, then what each does
        nv_file._run(b"nv set interface swp1 frob 1\nnv set system hostname x\nnv unset routing\n", "f", tree)
    assert [(p.line, p.message) for p in e.value.problems] == [
        (1, "nv set interface swp1 frob 1: interface.swp1.frob: no such place in NVUE's object tree"),
        (3, "nv unset routing: routing: no such place in NVUE's object tree"),
    ]


# --- the service's app, on a lab directory ------------------------------------------------------------
@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on leaf01's and spine01's TLS ports and leaf01's socket, over the samples' lab directory."""
    tmp = tmp_path_factory.mktemp("nvued")
    ctx = running_lab(tmp)
    d = ctx.dir
    cert, key = nvue_service.certificate(d, "nvsamples")
    sock = tmp / "run" / "leaf01" / "nvue.sock"
    s = _bind(sock)
    tcp = {n: Listener(port=0, certfile=str(cert), keyfile=str(key), tag=f"tcp:{n}") for n in ("leaf01", "spine01")}
    svc = Service(
        "nvued-test",
        make_app(Engine("nvsamples", d), nvue_service.password(d)),
        [*tcp.values(), Listener(uds=str(sock), fd=s.fileno(), tag="unix:leaf01")],
        max_body=MAX_BODY,
        timeout=5.0,
        body=problem_body,
    ).start()
    http = requests.Session()
    http.auth, http.verify, http.trust_env = (nvue_service.USER, nvue_service.password(d)), str(cert), False
    yield {n: f"https://127.0.0.1:{svc.port(ls)}/nvue_v1" for n, ls in tcp.items()}, http, sock, d
    svc.stop()
    s.close()


def nv(sock: Path, *words: str) -> subprocess.CompletedProcess:
    """The node's `nv` client, on the socket of the served app."""
    return subprocess.run(
        [sys.executable, str(CLIENT), *words],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "TWIN_NV_SOCKET": str(sock)},
    )


def test_the_api_makes_patches_diffs_and_reads_revisions_per_node(served):
    base, http, _, d = served
    r = http.post(base["leaf01"] + "/revision")
    assert r.status_code == 200
    rid, doc = next(iter(r.json().items()))
    assert rid.startswith("changeset/cumulus/") and doc == {
        "state": "pending",
        "transition": {"issue": {}, "progress": ""},
    }
    at = f"{base['leaf01']}/revision/{quote(rid, safe='')}"
    r = http.patch(
        base["leaf01"] + "/interface/swp3",
        params={"rev": rid},
        json={"bridge": {"domain": {"br_default": {"access": 30}}}},
    )
    assert r.status_code == 200 and r.json() == {"bridge": {"domain": {"br_default": {"access": 30}}}}
    assert http.get(base["leaf01"] + "/", params={"rev": rid, "diff": "applied"}).json() == [
        {"set": {"interface": {"swp3": {"bridge": {"domain": {"br_default": {"access": 30}}}}}}}
    ]
    assert http.delete(base["leaf01"] + "/interface/swp3", params={"rev": rid}).status_code == 200
    assert (
        http.get(base["leaf01"] + "/interface", params={"rev": rid}).json().keys()
        == http.get(base["leaf01"] + "/interface", params={"rev": "applied", "filled": "false"}).json().keys()
    )
    assert http.get(at).json()["state"] == "pending"
    assert http.get(base["leaf01"] + "/system/hostname", params={"rev": "startup"}).json() == "leaf01"
    # a node reaches only its own revisions; a node of twin's rendering has none
    assert http.get(f"{base['spine01']}/revision/{quote(rid, safe='')}").status_code == 404
    r = http.post(base["spine01"] + "/revision")
    assert r.status_code == 409 and "spine01 runs twin's rendering, not NVUE" in r.json()["detail"]
    assert http.delete(at).status_code == 200 and http.get(at).status_code == 404


def test_revisions_and_nv_sessions_outlive_the_service(served):
    """A pending revision and the node's `nv` session are there again when the service starts anew;
    one it stopped in the middle of applying comes back failed, saying so."""
    base, http, sock, d = served
    rid = next(iter(http.post(base["leaf01"] + "/revision").json()))
    http.patch(base["leaf01"] + "/system", params={"rev": rid}, json={"hostname": "renamed"})
    assert nv(sock, "set", "interface", "swp3", "link", "state", "down").returncode == 0
    again = Engine("nvsamples", d)
    assert again.get("leaf01", rid).tree["system"]["hostname"] == "renamed"
    assert again.get("leaf01", rid).state is State.PENDING
    session = again.get("leaf01", again.cli["leaf01"])
    assert session.tree["interface"]["swp3"]["link"]["state"] == "down"
    session.state = State.APPLY  # as if the service stopped while applying it
    again.keep()
    (back,) = [r for r in Engine("nvsamples", d).of("leaf01").values() if r.id == session.id]
    assert back.state is State.APPLY_FAIL and "stopped while applying it" in back.issues[0]
    assert (
        nv(sock, "config", "detach").returncode == 0
        and http.delete(f"{base['leaf01']}/revision/{quote(rid, safe='')}").status_code == 200
    )
    assert rid not in Engine("nvsamples", d).revisions and "leaf01" not in Engine("nvsamples", d).cli


@pytest.mark.parametrize(
    "method, path, body, status, detail",
    [
        ("PATCH", "/interface/swp1?rev=REV", b"{not json", 400, "not JSON"),
        ("PATCH", "/interface/swp1?rev=REV", b'{"link": {"state": 5}}', 400, "interface.swp1.link.state: 5 is not"),
        ("PATCH", "/interface/swp1?rev=REV", b'{"frob": 1}', 400, "interface.swp1.frob: no such key"),
        ("PATCH", "/interface/swp1?rev=REV", b"[" * 3000 + b"]" * 3000, 400, "deeper than 64"),
        ("PATCH", "/interface/swp1?rev=REV", b'{"a": "' + b"x" * MAX_BODY + b'"}', 413, f"at most {MAX_BODY} bytes"),
        ("PATCH", "/routing/table?rev=REV", b"{}", 404, "routing: no such place"),
        ("PATCH", "/interface/swp1", b"{}", 400, "give ?rev=<id>"),
        ("PATCH", "/interface/swp1?rev=applied", b"{}", 400, "give ?rev=<id>"),
        ("PATCH", "/interface/swp1?rev=nope", b"{}", 404, "no revision 'nope' on leaf01"),
        ("GET", "/interface?rev=REV&frob=1", b"", 400, "unknown parameter 'frob'"),
        ("GET", "/interface?rev=REV&filled=maybe", b"", 400, "filled is true or false"),
        ("PATCH", "/revision/REV", b'{"state": "explode"}', 400, 'takes {"state": "apply"'),
        ("PATCH", "/revision/REV", b'{"state": "apply", "auto-prompt": "yes"}', 400, '"auto-prompt" is'),
        ("POST", "/interface", b"", 405, "POST is not taken here"),
    ],
)
def test_hostile_requests_get_a_clear_error_and_change_nothing(served, method, path, body, status, detail):
    base, http, _, _ = served
    rid = next(iter(http.post(base["leaf01"] + "/revision").json()))
    before = http.get(base["leaf01"] + "/", params={"rev": rid}).json()
    r = http.request(
        method,
        base["leaf01"] + path.replace("REV", quote(rid, safe="")),
        data=body,
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == status, r.text
    doc = r.json()
    assert doc["status"] == status and detail in doc["detail"] and doc["title"] and "Traceback" not in r.text
    assert http.get(base["leaf01"] + "/", params={"rev": rid}).json() == before
    assert http.get(f"{base['leaf01']}/revision/{quote(rid, safe='')}").json()["state"] == "pending"


def test_a_revision_with_places_twin_does_not_emulate_needs_a_yes(served):
    base, http, _, _ = served
    rid = next(iter(http.post(base["leaf01"] + "/revision").json()))
    at = f"{base['leaf01']}/revision/{quote(rid, safe='')}"
    mlag = {"mac-address": "44:38:39:BE:EF:AA"}
    assert http.patch(base["leaf01"] + "/mlag", params={"rev": rid}, json=mlag).status_code == 200
    r = http.patch(at, json={"state": "apply"})
    assert r.status_code == 200 and r.json()["state"] == "ays_fail"
    assert [i["message"] for i in r.json()["transition"]["issue"].values()] == [
        "mlag is stored, not emulated: apply with auto-prompt ays_yes (nv config apply -y) to keep it"
    ]
    assert http.patch(at, json={"state": "save"}).status_code == 409  # not applied: nothing to save


def test_without_or_with_a_wrong_password_a_request_gets_401_and_changes_nothing(served):
    base, http, _, _ = served
    rid = next(iter(http.post(base["leaf01"] + "/revision").json()))
    anon = requests.Session()
    anon.verify, anon.trust_env = http.verify, False
    for auth in (None, ("cumulus", "wrong"), ("root", http.auth[1]), ("cumulus", "")):
        for method, path in (("POST", "/revision"), ("PATCH", f"/interface/swp1?rev={quote(rid, safe='')}")):
            r = anon.request(method, base["leaf01"] + path, auth=auth, json={"link": {"state": "down"}})
            assert r.status_code == 401 and r.headers["WWW-Authenticate"].startswith("Basic")
            assert r.json()["title"] == "Unauthorized"
    r = anon.get(base["leaf01"] + "/revision", headers={"Authorization": "Basic %%%not-base64"})
    assert r.status_code == 401
    assert http.get(base["leaf01"] + "/", params={"rev": rid, "diff": "applied"}).json() == []
    assert len(http.get(base["leaf01"] + "/revision").json()) >= 1


def test_nv_over_the_socket_edits_diffs_and_shows_the_nodes_pending_configuration(served):
    _, _, sock, _ = served
    assert nv(sock, "set", "interface", "swp3", "bridge", "domain", "br_default", "access", "30").returncode == 0
    assert nv(sock, "set", "bridge", "domain", "br_default", "vlan", "30", "vni", "30").returncode == 0
    p = nv(sock, "config", "diff", "-o", "json")
    assert p.returncode == 0 and json.loads(p.stdout) == [
        {
            "set": {
                "interface": {"swp3": {"bridge": {"domain": {"br_default": {"access": 30}}}}},
                "bridge": {"domain": {"br_default": {"vlan": {"30": {"vni": {"30": {}}}}}}},
            }
        }
    ]
    assert "access: 30" in nv(sock, "config", "diff").stdout
    shown = nv(sock, "config", "show")
    assert shown.stdout.startswith("- header:") and "hostname: leaf01" in shown.stdout and "vlan30" not in shown.stdout
    assert json.loads(nv(sock, "show", "system", "hostname", "-o", "json").stdout) == "leaf01"
    assert nv(sock, "config", "detach").returncode == 0 and nv(sock, "config", "diff").stdout == ""
    saved = nvue_service.saved(served[3], "leaf01")
    saved.unlink(missing_ok=True)
    assert nv(sock, "config", "save").stdout == "saved\n" and "hostname: leaf01" in saved.read_text()


def test_nv_config_patch_takes_a_file_of_the_whole_documented_mib(served, tmp_path):
    """A 1 MiB patch whose JSON escaping would be six times larger (quotes, backslashes, non-ASCII text
    in its comments) is sent as its bytes and applied to the pending revision; one byte more is refused
    by the client, with the limit."""
    _, _, sock, _ = served
    head = "# " + '"\\é€ ' * 16 + "\n"
    patch = "- set:\n    interface:\n      swp3:\n        link:\n          state: down\n"
    body = head * ((client_module.MAX_FILE - len(patch) - 1) // len(head.encode()))
    pad = client_module.MAX_FILE - len((body + patch).encode()) - 1
    text = body + "#" * pad + "\n" + patch
    f = tmp_path / "big.yaml"
    f.write_bytes(text.encode())
    assert f.stat().st_size == client_module.MAX_FILE == 1 << 20
    p = nv(sock, "config", "patch", str(f))
    assert (p.returncode, p.stderr) == (0, ""), p.stderr
    assert json.loads(nv(sock, "config", "diff", "-o", "json").stdout) == [
        {"set": {"interface": {"swp3": {"link": {"state": "down"}}}}}
    ]
    assert nv(sock, "config", "detach").returncode == 0
    f.write_bytes(text.encode() + b"\n")
    p = nv(sock, "config", "patch", str(f))
    assert (
        p.returncode == 1
        and p.stderr == f"Error: {f}: larger than {1 << 20} bytes, the limit of a configuration file\n"
    )


def test_the_file_nv_sends_is_its_bytes_or_a_clear_refusal():
    assert nv_run._file({"file_base64": "aGk6IDEK"}) == b"hi: 1\n"
    assert nv_run._file({"file": "h\xe9"}) == b"h\xe9", "a client of a lab made before: characters as bytes"
    assert nv_run._file({}) is None
    for body, why in [
        ({"file_base64": "not base64!"}, "file_base64 is not base64"),
        ({"file_base64": 5}, "file_base64 is not base64"),
        ({"file": 5}, "file is text"),
        ({"file_base64": "AAAA" * ((1 << 20) // 3 + 1)}, "at most 1048576 bytes"),
    ]:
        with pytest.raises(ValueError, match=why):
            nv_run._file(body)
    assert nv_run.MAX_BODY > 4 * (1 << 20) // 3, "the service takes a whole 1 MiB file in base64"


@pytest.mark.parametrize(
    "words, rc, said",
    [
        (["frob"], 2, "Error: unknown command 'frob'"),
        (
            ["set", "interface", "swp1", "link", "state", "sideways"],
            1,
            "Error: interface.swp1.link.state: 'sideways' is not one of up, down",
        ),
        (["set", "interface", "swp1", "frob", "1"], 1, "Error: interface.swp1.frob: no such place"),
        (["show", "routing"], 1, "Error: routing: no such place in NVUE's object tree"),
        (["config", "patch", "/nonexistent.yaml"], 1, "Error: /nonexistent.yaml: No such file"),
        (["config", "apply"], 0, "no changes to apply"),
    ],
)
def test_nv_says_what_is_wrong_without_a_traceback(served, words, rc, said):
    p = nv(served[2], *words)
    assert p.returncode == rc and said in p.stdout + p.stderr and "Traceback" not in p.stderr


def test_nv_says_so_when_no_service_answers(tmp_path):
    p = nv(tmp_path / "nvue.sock", "config", "show")
    assert p.returncode == 1 and "no NVUE service answers on" in p.stderr and "Traceback" not in p.stderr
