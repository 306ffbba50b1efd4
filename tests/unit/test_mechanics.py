"""Unit tests of the small mechanisms: image tags, the deadline wait, the execution seam."""

import pytest

from twin.base import wait
from twin.base.errors import CommandError, ConvergenceTimeout, TwinError
from twin.runtime import images
from twin.runtime.exec import NodeExec


def test_image_tags_follow_their_recipe(tmp_path, monkeypatch):
    (tmp_path / "base").mkdir()
    (tmp_path / "node").mkdir()
    (tmp_path / "base" / "base.yml").write_text("variant: minbase\n")
    (tmp_path / "node" / "Dockerfile").write_text("FROM x\n")
    monkeypatch.setattr(images, "RECIPES", tmp_path)
    base, node = images.base_tag("bookworm"), images.node_tag("bookworm")
    assert base.startswith("twin-base:bookworm-") and node.startswith("twin-node:bookworm-")
    assert images.node_tag("bookworm") == node, "same recipe, same tag: the build is skipped"
    (tmp_path / "node" / "Dockerfile").write_text("FROM x\nRUN true\n")
    assert images.node_tag("bookworm") != node and images.base_tag("bookworm") == base
    (tmp_path / "base" / "base.yml").write_text("variant: buildd\n")
    changed = images.node_tag("bookworm")
    assert images.base_tag("bookworm") != base and changed != node, "a new base rebuilds the node image"
    assert images.node_tag("trixie").startswith("twin-node:trixie-")


def test_wait_returns_once_nothing_is_missing():
    left = [["a", "b"], ["b"], []]
    assert wait.until(lambda: left.pop(0), timeout=5, what="x", first=0.01) < 1
    assert left == []


def test_wait_timeout_names_what_is_missing():
    with pytest.raises(ConvergenceTimeout) as exc:
        wait.until(
            lambda: ["leaf1: BGP session on swp1 to spine1 is Active"],
            timeout=0.05,
            what="underlay convergence",
            first=0.01,
            diagnose=lambda: ["leaf1: BGP session on swp1 to spine1 is Connect"],
        )
    assert exc.value.missing == ["leaf1: BGP session on swp1 to spine1 is Connect"]
    assert "underlay convergence not reached" in str(exc.value)
    assert "- leaf1: BGP session on swp1 to spine1 is Connect" in str(exc.value)


class FakeContainer:
    """A running container as far as NodeExec reads it (its id and init pid)."""

    id, name, status, attrs = "abc123", "twin-lab-leaf1", "running", {"State": {"Pid": 4242}}

    def reload(self):
        pass


@pytest.fixture
def node(monkeypatch):
    """NodeExec on a fake container; `calls` records the argv nsenter would run, `answer` is the reply."""
    calls, answer = [], {}
    monkeypatch.setattr("twin.runtime.exec._of", lambda pid, cid: pid == 4242 and cid == "abc123")

    class FakePopen:
        def __init__(self, argv, stdout, stderr, **kw):
            calls.append(argv)
            stdout.write(answer.get("out", b""))
            stderr.write(answer.get("err", b""))
            self.pid = 0

        def wait(self, timeout=None):
            return answer.get("rc", 0)

    monkeypatch.setattr("twin.runtime.exec.subprocess.Popen", FakePopen)
    return NodeExec(FakeContainer(), "lab/leaf1"), calls, answer


def test_commands_enter_the_nodes_namespaces_under_a_deadline(node):
    ex, calls, answer = node
    answer["out"] = b'{"a": 1}\n{"b": [2]}\n'
    docs = ex.vtysh_json("show a json", "show b json")
    assert docs == [{"a": 1}, {"b": [2]}]
    argv = calls[0]
    assert argv[:2] == ["nsenter", "--target=4242"] and "--net" in argv and "--mount" in argv
    assert argv[argv.index("--") + 1 :][:4] == ["timeout", "--kill-after=2", "30", "vtysh"], (
        "every command has a deadline"
    )
    assert argv[-4:] == ["-c", "show a json", "-c", "show b json"]


def test_vtysh_json_bad_output_is_an_error_not_an_empty_dict(node):
    ex, _, answer = node
    answer["out"] = b"% Unknown command: show bgp summry json\n"
    with pytest.raises(CommandError, match="output is not JSON"):
        ex.vtysh_json("show bgp summry json")


def test_failed_command_carries_command_exit_code_and_output(node):
    ex, _, answer = node
    answer.update(rc=2, err=b"bgpd is not running\n")
    with pytest.raises(CommandError) as exc:
        ex.check(["vtysh", "-c", "show bgp summary"])
    e = exc.value
    assert (e.rc, e.cmd, e.stderr) == (2, ["vtysh", "-c", "show bgp summary"], "bgpd is not running\n")
    assert str(e) == "lab/leaf1: `vtysh -c show bgp summary` exited 2:\nbgpd is not running"


def test_a_stopped_node_is_named(monkeypatch):
    c = FakeContainer()
    c.attrs, c.status = {"State": {"Pid": 0}}, "exited"
    monkeypatch.setattr("twin.runtime.exec._of", lambda pid, cid: False)
    with pytest.raises(TwinError, match="lab/leaf1: container twin-lab-leaf1 is not running \\(exited\\)"):
        NodeExec(c, "lab/leaf1").run(["true"])


def test_a_pid_known_is_used_without_asking_the_engine_while_it_is_the_container_s(monkeypatch):
    """Bring-up and a lab's context know each node's pid (and a listing's inspection carries it): the
    exec seam uses it, checked against the container's cgroup, and inspects the container only when
    it is not the container's any more (a node started again)."""
    monkeypatch.setattr("twin.runtime.exec._of", lambda pid, cid: pid == 4242)
    c = FakeContainer()
    reloads = []
    c.reload = lambda: reloads.append(1)  # type: ignore[method-assign]
    assert NodeExec(c, "lab/leaf1").pid == 4242 and reloads == [], "the inspection's pid"
    assert NodeExec(c, "lab/leaf1", pid=4242).pid == 4242 and reloads == [], "the caller's pid"
    assert NodeExec(c, "lab/leaf1", pid=777).pid == 4242 and reloads == [1], "a pid gone: inspected again"
    sparse = FakeContainer()
    sparse.attrs = {"State": "running"}  # a listing's short record: no pid in it
    sparse.reload = lambda: setattr(sparse, "attrs", {"State": {"Pid": 4242}})  # type: ignore[method-assign]
    assert NodeExec(sparse, "lab/leaf1").pid == 4242


def test_daemons_are_started_through_the_container_runtime_so_they_live_in_the_nodes_cgroup(node):
    ex, calls, _ = node
    started = []

    class Api:  # the engine's exec endpoints, as the SDK's low-level client calls them
        def exec_create(self, cid, cmd):
            started.append((cid, cmd))
            return {"Id": "e1"}

        def exec_start(self, exec_id, demux):
            return b"Started watchfrr.\n", b""

        def exec_inspect(self, exec_id):
            return {"ExitCode": 0}

    ex.container.client = type("Client", (), {"api": Api()})()
    assert ex.start(["/usr/local/bin/twin-node", "start-frr"]).check().stdout == "Started watchfrr.\n"
    assert started == [("abc123", ["timeout", "--kill-after=2", "30", "/usr/local/bin/twin-node", "start-frr"])]
    assert calls == [], "not through nsenter"
