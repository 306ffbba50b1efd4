"""A node on its own image that exits while twin configures it is named as its image stopping
(exit code, last log line), not as the exec that failed under it."""

from __future__ import annotations

from twin.base.errors import TwinError
from twin.runtime import ownimage


class Handle:
    def __init__(self, running: bool, code: int = 127, log: str = "sh: /usr/lib/lab/start-missing: not found\n"):
        self.running, self.code, self.log = running, code, log

    def state(self) -> dict:
        return {"Running": self.running, "ExitCode": self.code}

    def logs(self, tail: int = 20) -> str:
        return self.log


def test_an_image_that_stopped_under_its_configuration_is_named_as_stopping():
    failed = TwinError("lab/h1: container twin-lab-h1 is not running (exited)")
    said = ownimage.gone_instead("lab", "h1", "example.invalid/broken:1", Handle(False), failed)
    assert isinstance(said, ownimage.StartFailed)
    assert str(said) == (
        "lab/h1: its image example.invalid/broken:1 stopped once started (exit code 127); "
        "its last log line: sh: /usr/lib/lab/start-missing: not found"
    )


def test_a_failure_of_a_node_still_running_is_said_as_it_was():
    failed = TwinError("lab/h1: `ip link set eth1 up` exited 1")
    assert ownimage.gone_instead("lab", "h1", "example.invalid/ok:1", Handle(True), failed) is failed


def test_a_neighbours_port_lost_to_a_stopped_image_is_said_as_that_image_stopping():
    """h1's image exits at once: its namespace goes, and with it its end of r1's eth2. The bring-up fails on
    r1's port first; what ended it is h1 (the suite's flake: 'r1: port eth2 is missing after wiring')."""
    lost = TwinError("r1: port eth2 is missing after wiring")
    handles = {"r1": Handle(True), "h1": Handle(False), "h2": Handle(True)}
    images = {"r1": "example.invalid/frr:8", "h1": "example.invalid/broken:1", "h2": "example.invalid/ok:1"}
    said = ownimage.cause("lab", lost, handles, images)  # type: ignore[arg-type]
    assert isinstance(said, ownimage.StartFailed)
    assert str(said).startswith("lab/h1: its image example.invalid/broken:1 stopped once started (exit code 127)")
    assert ownimage.cause("lab", lost, {"r1": Handle(True)}, images) is lost  # type: ignore[arg-type]
    assert ownimage.cause("lab", lost, handles, {}) is lost  # type: ignore[arg-type]
    first = ownimage.StartFailed("lab/h2: its image did not start")
    assert ownimage.cause("lab", first, handles, images) is first  # type: ignore[arg-type]
