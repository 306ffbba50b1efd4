"""Host-wide limits against the real host (issue 19): `twin up` refuses, with the numbers, a fabric
the host's neighbour tables cannot hold, before creating anything; a lab that does not converge
names what it can see on the host (a dead daemon, an OOM kill) before what is missing.

Nothing here changes a host setting: the refused fabric is computed from the host's own values,
and the causes are provoked inside the test's own containers."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from tests.e2e.conftest import leftovers, said, twin_cli
from twin.base import wait
from twin.base.errors import ConvergenceTimeout
from twin.lifecycle import barrier
from twin.lifecycle import hostlimits as H
from twin.topology import load

pytestmark = pytest.mark.e2e
V6 = "net.ipv6.neigh.default.gc_thresh3"


def test_up_refuses_a_fabric_the_host_cannot_hold_and_creates_nothing(runtime, tmp_path):
    have = H.host_settings().get(V6)
    if have is None:
        pytest.skip("the neighbour thresholds are not visible here (not the host's network namespace)")
    spines, leafs = 8, have // (8 * 2 * H.ND_PER_FABRIC_PORT) + 1  # one leaf more than the table holds
    nodes = {f"s{i}": {"kind": "spine"} for i in range(1, spines + 1)}
    nodes |= {f"l{i}": {"kind": "leaf"} for i in range(1, leafs + 1)}
    f = tmp_path / "huge.yml"
    f.write_text(
        yaml.safe_dump(
            {
                "name": "t-hl-huge",
                "defaults": {"loopback_pool": "10.255.0.0/16"},
                "nodes": nodes,
                "links": [[f"s{s}", f"l{leaf}"] for leaf in range(1, leafs + 1) for s in range(1, spines + 1)],
            }
        )
    )
    lab_need = H.demand(load(f)).nd_gc
    assert lab_need > have

    p = twin_cli("up", str(f))
    assert p.returncode == 1
    (line,) = said(p.stderr)  # one line, every number in it (beside the progress lines)
    m = re.search(rf"{re.escape(V6)} = (\d+) < (\d+) needed \((\d+) for this lab \+ (\d+) in use now;", line)
    assert m, line
    got_have, need, lab, running = map(int, m.groups())
    assert (got_have, lab, need) == (have, lab_need, lab_need + running)
    assert line.startswith("error: host limits too low for lab 't-hl-huge', nothing was created: ")
    assert f"sysctl -w {V6}={1 << (need - 1).bit_length()}" in line
    assert ("host-setup.sh" in line) != Path(H.SYSCTL_FILE).exists(), "the host setup is named until it ran"
    assert leftovers(runtime, "t-hl-huge") == []  # no container, no link, no lab directory


def test_a_timeout_names_dead_daemons_and_oom_kills_before_what_is_missing(make_lab):
    lab = make_lab("tests/e2e/small.yml", "t-hl-causes")
    pids = lab.pids()
    # FRR counts as started once its daemons are SETTLE_S old; before that a missing daemon is not judged
    wait.until(
        lambda: [] if H.processes(pids["leaf1"])["zebra"][0] >= H.SETTLE_S else ["zebra young"],
        30,
        "FRR settled on leaf1",
        first=0.1,
        cap=0.5,
    )
    leaf1, leaf2 = lab.node("leaf1"), lab.node("leaf2")
    leaf1.check(["sh", "-c", "kill $(pidof watchfrr) && kill $(pidof bgpd)"])  # bgpd dead for good
    leaf2.container.update(mem_limit="96m", memswap_limit="96m")  # leaf2's own cgroup only
    # through the container runtime, so the hog is the node's own process in its cgroup (a transient
    # command through the nsenter seam is twin's child, charged to twin's cgroup)
    hog = leaf2.start(["python3", "-c", "x = bytearray(256 * 2**20)"])
    assert hog.rc == 137, "the kernel killed the hog for lack of memory in leaf2's cgroup"

    start = time.monotonic()
    with pytest.raises(ConvergenceTimeout) as exc:
        barrier.converge(lab.context(), 3, since=start - 60)
    causes = exc.value.causes
    assert "leaf1: FRR bgpd, watchfrr not running: nothing restarts it (watchfrr is gone)" in causes
    assert "leaf2: out of memory: 1 process(es) killed in its container" in causes
    assert any(c.startswith("kernel: out of memory") and "python3" in c for c in causes), causes
    text = str(exc.value)
    assert re.match(  # its last round may end past the 3 s on a busy machine
        r"convergence \(BGP sessions, loopback routes\) not reached after [3-9]s; host-level cause: ", text
    ), text.splitlines()[0]
    assert text.index("  ! leaf1: FRR bgpd") < text.index("  - "), "causes come before what is missing"
    assert any(m.startswith("leaf1:") for m in exc.value.missing)


def test_host_usage_and_settings_read_the_host():
    usage, settings = H.host_usage(), H.host_settings()
    assert usage.tasks > 0 and usage.mem_available_mib > 0
    if V6 not in settings:
        pytest.skip("not the host's network namespace")
    assert settings[V6] > 0 and usage.to_dict()["nd"] == usage.nd >= 0
