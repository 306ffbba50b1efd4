"""A node is not trusted: a symbolic link it plants in its own filesystem is never followed by twin
reading that filesystem from the host (/proc/<pid>/root, where an absolute link resolves against the
HOST's root). Each test plants one in a running node, pointing at a host file holding a marker: the
plain host-side read would return the marker (the hazard is real), twin's reader refuses, names the
link, and the marker appears nowhere: the runtime's reader, a packet capture whose pcap the node
replaced with a link, and the timeout diagnosis reading the node's FRR daemons file."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from twin.lifecycle import hostlimits
from twin.runtime import nodefs
from twin.traffic.capture import Capture

pytestmark = pytest.mark.e2e

TOPOLOGY = "name: t-nodefs\nnodes:\n  spine1: {kind: spine}\n  leaf1: {kind: leaf}\nlinks:\n  - [spine1, leaf1]\n"


@pytest.fixture(scope="module")
def lab(make_lab, tmp_path_factory):
    path = tmp_path_factory.mktemp("nodefs") / "t.yml"
    path.write_text(TOPOLOGY)
    lab = make_lab(path, "t-nodefs")
    yield lab
    lab.down()


@pytest.fixture
def marker(tmp_path_factory):
    """A host file no node may ever get twin to read: (its path, the secret it holds)."""
    secret = f"host-secret-{uuid.uuid4().hex}"
    path = tmp_path_factory.mktemp("host") / "secret.txt"
    path.write_text(secret + "\n")
    return path, secret


def test_a_link_planted_in_a_node_is_not_followed(lab, marker):
    host_file, secret = marker
    ex = lab.node("leaf1")
    ex.check(["ln", "-sfn", str(host_file), "/tmp/planted"])
    ex.check(["ln", "-sfn", str(host_file.parent), "/tmp/planted-dir"])
    assert Path(f"/proc/{ex.pid}/root/tmp/planted").read_text().strip() == secret, (
        "followed from the host, the node's link leads to the host's file: the hazard is real"
    )
    for inside, link in (("/tmp/planted", "/tmp/planted"), ("/tmp/planted-dir/secret.txt", "/tmp/planted-dir")):
        with pytest.raises(nodefs.NodeFileError) as e:
            ex.read_file(inside)
        said = str(e.value)
        assert (
            said.startswith(f"{ex.where}: {inside}: {link.lstrip('/')} is a symbolic link (to ")
            and "not followed; a node is not trusted" in said
            and secret not in said
        )
    ex.check(["sh", "-c", "echo plain > /tmp/plain"])
    assert ex.read_file("/tmp/plain") == b"plain\n" and ex.read_file("/tmp/nothing-here") is None
    assert ex.read_file("/tmp/../../../tmp/plain") == b"plain\n", ".. stops at the node's root"


def test_a_capture_whose_pcap_the_node_swapped_for_a_link_reads_nothing_of_the_host(lab, marker):
    host_file, secret = marker
    ex = lab.node("leaf1")
    cap = Capture(ex, "swp1", "icmp")
    with pytest.raises(nodefs.NodeFileError) as e:
        with cap:
            ex.check(["sh", "-c", f"rm -f {cap.file} && ln -s {host_file} {cap.file}"])
    assert f"{cap.file.lstrip('/')} is a symbolic link (to {host_file})" in str(e.value) and secret not in str(e.value)
    assert cap.packets == [] and host_file.read_text().strip() == secret, "the host's file is untouched"
    assert ex.run(["test", "-e", cap.file]).rc != 0 and ex.run(["test", "-L", cap.file]).rc != 0, (
        "the link (not what it points to) is removed from the node"
    )


def test_the_timeout_diagnosis_names_a_linked_daemons_file_and_reads_nothing_through_it(lab, marker, runtime):
    host_file, secret = marker
    ex = lab.node("spine1")
    daemons = ex.read_file(nodefs.FRR_DAEMONS)
    try:
        ex.check(
            ["sh", "-c", f"mv {nodefs.FRR_DAEMONS} /etc/frr/daemons.real && ln -s {host_file} {nodefs.FRR_DAEMONS}"]
        )
        causes = hostlimits.container_causes("spine1", runtime.containers("t-nodefs")["spine1"])
        assert causes == [
            f"spine1: {nodefs.FRR_DAEMONS}: etc/frr/daemons is a symbolic link (to {host_file}): not "
            "followed; a node is not trusted, and twin follows no link inside one (it could lead to "
            "the host's files)"
        ]
    finally:
        ex.check(["sh", "-c", f"rm -f {nodefs.FRR_DAEMONS} && mv /etc/frr/daemons.real {nodefs.FRR_DAEMONS}"])
    assert ex.read_file(nodefs.FRR_DAEMONS) == daemons
    assert hostlimits.container_causes("spine1", runtime.containers("t-nodefs")["spine1"]) == []
