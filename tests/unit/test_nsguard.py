"""A node's tenant namespaces are checked before twin uses them (issue 34): the verdicts from the
host's tables, faked here (the e2e test plants links and binds in a running node)."""

from __future__ import annotations

import os
import subprocess

import pytest

from twin.base import wait
from twin.base.errors import NamespaceRefused
from twin.runtime import nsguard

NODE_PIDNS, NODE_MNT, HOST_PIDNS, OTHER_PIDNS, OTHER_MNT = 11, 12, 21, 31, 32
RED, BLUE, OTHERS = 101, 102, 201


def guard(procs=None, mounts=None) -> nsguard.Guard:
    g = nsguard.Guard()
    g.tables = nsguard.Tables(
        at=float("inf"),
        procs=procs or {},
        mounts={RED: {(NODE_MNT, "/run/netns/red", 500)}, BLUE: {(NODE_MNT, "/run/netns/blue", 500)}} | (mounts or {}),
    )
    return g


def judge(g: nsguard.Guard, ino: int, vrf: str = "red") -> str:
    return g._judge(ino, vrf, NODE_PIDNS, NODE_MNT, HOST_PIDNS)


def test_the_tenants_own_namespace_passes():
    assert judge(guard(), RED) == "" and judge(guard(), BLUE, "blue") == ""
    in_use = guard(procs={RED: {(NODE_PIDNS, 501), (HOST_PIDNS, 7)}})  # the node's `ip netns exec`, twin's sender
    assert judge(in_use, RED) == ""


def test_another_containers_namespace_is_refused():
    g = guard(procs={OTHERS: {(OTHER_PIDNS, 900)}}, mounts={OTHERS: {(NODE_MNT, "/run/netns/red", 500)}})
    assert judge(g, OTHERS) == "the network namespace of another container (host pid 900)"


def test_a_namespace_mounted_in_another_node_or_on_the_host_is_refused():
    nsguard.NAMES[950] = "lab2/leaf2"
    g = guard(mounts={OTHERS: {(NODE_MNT, "/run/netns/red", 500), (OTHER_MNT, "/run/netns/red", 950)}})
    assert judge(g, OTHERS) == (
        "a namespace mounted outside the node too: at /run/netns/red in node lab2/leaf2 (another node's, or the host's)"
    )
    g = guard(mounts={OTHERS: {(NODE_MNT, "/run/netns/red", 500), (OTHER_MNT, "/run/docker/netns/ab12", 3)}})
    assert "at /run/docker/netns/ab12 in the mounts of host pid 3" in judge(g, OTHERS)


def test_another_tenants_namespace_bound_over_this_one_is_refused():
    g = guard(mounts={BLUE: {(NODE_MNT, "/run/netns/blue", 500), (NODE_MNT, "/run/netns/red", 500)}})
    assert judge(g, BLUE) == "the same namespace as /run/netns/blue in the node (another tenant's)"
    assert judge(g, BLUE, "blue") == "the same namespace as /run/netns/red in the node (another tenant's)"


def test_the_host_and_the_nodes_own_namespace_are_refused_before_any_table():
    g = nsguard.Guard()
    me = os.getpid()
    own = os.stat("/proc/self/ns/net").st_ino
    node = os.stat(f"/proc/{me}/ns/net").st_ino
    assert g.foreign(1 << 30, "red", nsguard.INIT_NET) == "the host's network namespace"
    assert g.foreign(1 << 30, "red", own) in (
        "the host's network namespace",
        "the host's network namespace (twin's own)",
    )
    assert g.foreign(me, "red", node) != "", "twin's namespace seen as a node's own: refused either way"
    child = subprocess.Popen(["unshare", "--net", "sleep", "30"])  # a node: a process with a namespace of its own
    try:
        wait.until(
            lambda: [] if os.stat(f"/proc/{child.pid}/ns/net").st_ino != own else ["unshared"],
            5,
            "unshare",
            first=0.01,
            cap=0.05,
        )
        ino = os.stat(f"/proc/{child.pid}/ns/net").st_ino
        assert g.foreign(child.pid, "red", ino) == "the node's own network namespace, not tenant red's"
    finally:
        child.kill()
        child.wait()
    assert g.tables.at == 0.0, "refused without reading the host's tables"


def test_mountinfo_lines_of_namespaces_are_read(tmp_path, monkeypatch):
    lines = [
        "378 377 0:4 net:[4026534064] /run/netns/red rw shared:44 - nsfs nsfs rw\n",
        "379 377 0:4 net:[4026534131] /run/netns/a\\040b rw shared:45 - nsfs nsfs rw\n",
        "380 377 0:4 mnt:[4026534132] /run/x rw - nsfs nsfs rw\n",
        "381 377 0:31 / /run rw,nosuid - tmpfs tmpfs rw\n",
    ]
    (tmp_path / "mountinfo").write_text("".join(lines))
    real_open = open
    monkeypatch.setattr(nsguard, "open", lambda p, **kw: real_open(tmp_path / "mountinfo", **kw), raising=False)
    assert nsguard._nsfs_mounts("1") == [(4026534064, "/run/netns/red"), (4026534131, "/run/netns/a b")]


@pytest.mark.parametrize("name", ["..", ".", "a/b", "x\0"])
def test_a_tenant_name_that_is_no_file_name_is_refused(name):
    with pytest.raises(NamespaceRefused) as e:
        nsguard.open_tenant(os.getpid(), name)
    assert "is no tenant namespace name" in str(e.value)


def test_a_file_that_is_no_namespace_is_refused(tmp_path):
    (tmp_path / "ns").write_text("x")
    with pytest.raises(NamespaceRefused) as e:
        nsguard.open_path(str(tmp_path / "ns"))
    assert str(e.value) == f"{tmp_path}/ns is not a network namespace"
    with pytest.raises(NamespaceRefused, match="/dev/null is not a network namespace"):
        nsguard.open_path("/dev/null")  # a device: never handed the ioctl
    os.close(nsguard.open_path("/proc/self/ns/net"))


def test_a_refusal_on_tables_read_before_the_check_is_judged_again_on_fresh_ones(monkeypatch):
    """A stopped node's holding namespace, removed as the node starts again, frees its inode, and the kernel
    gives it to the node's new tenant namespace: tables read a moment before still show it mounted at the
    holding place (test_nvue_live's node-restart was refused so). A refusal is made on fresh tables only."""
    pid = 4242
    ids = {f"/proc/{pid}/ns/pid": NODE_PIDNS, f"/proc/{pid}/ns/mnt": NODE_MNT, "/proc/self/ns/pid": HOST_PIDNS}
    monkeypatch.setattr(nsguard, "_ino", lambda path: ids.get(path, 7))
    held = "/run/netns/twin-lab.held.leaf01"
    g = nsguard.Guard()
    g.tables = nsguard.Tables(at=nsguard.time.monotonic(), mounts={RED: {(OTHER_MNT, held, 2)}})
    fresh = nsguard.Tables(mounts={RED: {(NODE_MNT, "/run/netns/red", 500)}})
    reads = []
    monkeypatch.setattr(nsguard.Tables, "read", classmethod(lambda cls: reads.append(1) or fresh))
    assert g.foreign(pid, "red", RED) == "" and reads == [1]
    g = nsguard.Guard()  # still there on fresh tables: refused
    g.tables = nsguard.Tables(at=nsguard.time.monotonic(), mounts={RED: {(OTHER_MNT, held, 2)}})
    fresh.mounts[RED].add((OTHER_MNT, held, 2))
    assert g.foreign(pid, "red", RED).startswith(f"a namespace mounted outside the node too: at {held}")
    assert reads == [1, 1]
