"""The wait before a node's own image starts (`twin.interop.startscript.wait_then_exec`), run by sh."""

from __future__ import annotations

import subprocess
import time

from twin.interop.startscript import POLL, wait_then_exec


def test_the_wait_reads_a_ports_flags_only_once_they_are_there_and_starts_once_it_is_up(tmp_path):
    """A port moved into the node can show its directory before its attributes: an empty flags file
    once ended the script in sh's arithmetic (exit 2, "arithmetic expression: expecting primary"), and
    the node's own image never started. It waits on, until the port is up."""
    port = tmp_path / "swp1"
    port.mkdir()
    (port / "flags").write_text("")
    p = subprocess.Popen(
        ["/bin/sh", "-c", wait_then_exec(["swp1"], str(tmp_path)), "twin-wait", "echo", "started"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for flags in ("", "0x1002\n"):  # no attributes yet, then there but down
            (port / "flags").write_text(flags)
            time.sleep(POLL * 4)
            assert p.poll() is None, p.communicate()
        (port / "flags").write_text("0x1003\n")  # up
        out, err = p.communicate(timeout=10)
    finally:
        p.kill()
    assert (p.returncode, out.strip(), err) == (0, "started", "")
