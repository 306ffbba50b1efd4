"""Unit tests of the small mechanisms: image tags, the deadline wait, the execution seam."""
import pytest

from twin import wait
from twin.runtime import images
from twin.errors import CommandError, ConvergenceTimeout
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
        wait.until(lambda: ["leaf1: BGP session on swp1 to spine1 is Active"], timeout=0.05,
                   what="underlay convergence", first=0.01,
                   diagnose=lambda: ["leaf1: BGP session on swp1 to spine1 is Connect"])
    assert exc.value.missing == ["leaf1: BGP session on swp1 to spine1 is Connect"]
    assert "underlay convergence not reached" in str(exc.value)
    assert "- leaf1: BGP session on swp1 to spine1 is Connect" in str(exc.value)


class FakeContainer:
    """Stands in for docker's Container.exec_run to test result handling only."""

    def __init__(self, rc, out, err=b""):
        self.rc, self.out, self.err = rc, out, err
        self.cmds = []

    def exec_run(self, cmd, demux, user):
        self.cmds.append(cmd)
        return self.rc, (self.out, self.err)


def test_vtysh_json_splits_one_document_per_command():
    c = FakeContainer(0, b'{"a": 1}\n{"b": [2]}\n')
    docs = NodeExec(c, "lab/leaf1").vtysh_json("show a json", "show b json")
    assert docs == [{"a": 1}, {"b": [2]}]
    assert c.cmds[0][-4:] == ["-c", "show a json", "-c", "show b json"]
    assert c.cmds[0][0] == "timeout", "every command runs under a deadline"


def test_vtysh_json_bad_output_is_an_error_not_an_empty_dict():
    c = FakeContainer(0, b"% Unknown command: show bgp summry json\n")
    with pytest.raises(CommandError, match="output is not JSON"):
        NodeExec(c, "lab/leaf1").vtysh_json("show bgp summry json")


def test_failed_command_carries_command_exit_code_and_output():
    c = FakeContainer(2, b"", b"bgpd is not running\n")
    with pytest.raises(CommandError) as exc:
        NodeExec(c, "lab/leaf1").check(["vtysh", "-c", "show bgp summary"])
    e = exc.value
    assert (e.rc, e.cmd, e.stderr) == (2, ["vtysh", "-c", "show bgp summary"], "bgpd is not running\n")
    assert str(e) == "lab/leaf1: `vtysh -c show bgp summary` exited 2:\nbgpd is not running"
