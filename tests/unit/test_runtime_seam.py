"""The runtime seam (issue 26): the kernel steps' text and netlink tables cover the same ops,
and library errors become twin's own at the seam."""

import errno
import os

import docker
import pytest

from twin.base.errors import NetlinkFailed, NodeGone, RuntimeFailed, TwinError
from twin.config.steps import OPS
from twin.runtime import failures, netns, observe
from twin.runtime.base import NodeHandle
from twin.runtime.steps_apply import APPLY


def test_text_and_apply_tables_cover_the_same_ops():
    over_netlink = {op for op, o in OPS.items() if not o.in_node}
    assert set(APPLY) == over_netlink
    assert {op for op, o in OPS.items() if o.in_node} == {
        "netns",
        "netns-once",
        "mgmt-netns",
        "vlan-bridge",
        "svd",
        "vlan",
        "macvlan",
        "bridge-vlan",
        "vlan-tunnel",
        "fdb-vlan",
        "bond",
        "nft",
        "nft-delete",
        "tc-batch",
        "lldp",
        "hostname",
    }  # tc-batch: an NVUE port's traffic classes, a file of the node's (twin.nvue.qos); lldp: lldpcli
    # (twin.nvue.lldp); hostname: the node's UTS name and /etc files (twin.nvue.hostname)


def test_a_netlink_refusal_leaves_the_seam_as_netlink_failed_with_its_errno():
    with pytest.raises(NetlinkFailed) as exc, netns.ipr(os.getpid()) as ipr:
        ipr.link("get", ifname="no-such-if0")
    assert exc.value.code == errno.ENODEV and isinstance(exc.value, TwinError)
    with netns.Handles() as handles, pytest.raises(NetlinkFailed) as exc:  # the readers translate too
        observe.mac(handles.get(os.getpid()), "no-such-if0")
    assert exc.value.code == errno.ENODEV


def test_handles_made_without_a_node_apply_no_kernel_steps():
    """`Handles()` (the readers' handles, of any pid) is no node's `Netns`: asked for one, twin's error
    (not a path of /proc/None)."""
    for ask in (lambda h: h.ipr(""), lambda h: h.fd("red"), lambda h: h.sysctl("", "net.ipv4.ip_forward", "1")):
        with netns.Handles() as handles, pytest.raises(TwinError) as exc:
            ask(handles)
        assert str(exc.value) == "netlink handles made without a node (Handles()) apply no kernel steps"


def test_a_namespace_that_is_gone_is_node_gone_and_still_an_oserror():
    with pytest.raises(NodeGone) as exc, netns.ipr(2**22 + 1):  # above pid_max: no such process
        pass
    assert isinstance(exc.value, OSError) and exc.value.errno == errno.ENOENT
    assert "/proc/4194305/ns/net" in str(exc.value)


def test_docker_errors_become_twins_own():
    with pytest.raises(NodeGone, match=r"^container twin-x-leaf1: No such container"):
        with failures.engine_errors("container twin-x-leaf1"):
            raise docker.errors.NotFound("404", explanation="No such container: twin-x-leaf1")
    with pytest.raises(RuntimeFailed, match=r"^cannot stop twin-x-leaf1: Docker: conflict") as exc:
        with failures.engine_errors("cannot stop twin-x-leaf1"):
            raise docker.errors.APIError("409", explanation="conflict")
    assert not isinstance(exc.value, NodeGone)
    assert failures.describe(docker.errors.DockerException("connection refused")).startswith("Docker: connection")
    assert failures.describe(ValueError("x")) is None


def test_a_node_handle_names_its_node_and_lab():
    class Box:
        name, id, status = "twin-x-leaf1", "abc", "exited"
        labels = {"twin.lab": "x", "twin.node": "leaf1"}
        attrs = {"State": {"Pid": 0}}

        def reload(self):
            raise docker.errors.NotFound("gone", explanation="No such container: twin-x-leaf1")

    h = NodeHandle(Box())
    assert (h.name, h.node, h.lab, h.status, h.id) == ("twin-x-leaf1", "leaf1", "x", "exited", "abc")
    with pytest.raises(NodeGone, match="No such container"):
        h.running()


def test_both_runtimes_implement_the_runtime_protocol():
    from twin.runtime.base import Runtime
    from twin.runtime.registry import RUNTIMES

    wanted = ({m for m in vars(Runtime) if not m.startswith("_")} | set(Runtime.__annotations__)) - {"client"}
    assert wanted >= {"bring_up", "start_nodes", "containers", "labs", "pid", "remove_node", "remove_lab", "name"}
    for cls in RUNTIMES.values():
        assert [m for m in sorted(wanted) if not hasattr(cls, m)] == [], cls.__name__
