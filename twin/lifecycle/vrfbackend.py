"""Which VRF backend a lab runs on this host, decided before anything is made.

The netns backend is the default on every kernel (`twin.config.backend`); the device
backend is what a topology (`defaults.vrf_backend: device`) or `twin up --vrf-backend
device` asks for. Either way, the kernel is asked (`twin.runtime.kernel.vrf_devices`)
only when something needs Linux VRF devices: the device backend, or the user's own
input (an `exec` command that adds a VRF device, a frr.conf VRF that no tenant makes).
On a kernel without them (CONFIG_NET_VRF), the device backend is refused at once, with
what twin offers instead, not found failing deep in bring-up; the user's own input that
needs them is a warning with the same words, and the lab goes on as containerlab's would
(the `exec` command fails and is reported; zebra keeps such a VRF inactive).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from twin.base.errors import Problem, TopologyError
from twin.config.backend import DEVICE, INSTEAD, NAMES, NO_VRF_DEVICES, Backend, device_needs, wanted
from twin.runtime import probe_vrf_devices
from twin.topology.model import Fabric


@dataclass(frozen=True)
class Choice:
    backend: Backend
    why: str  # what chose it
    vrf_devices: bool | None  # what the kernel offers (None: nothing needed to ask)
    warnings: tuple[str, ...] = ()  # the user's input that needs VRF devices this kernel lacks

    def __str__(self) -> str:
        kernel_says = {True: "; this kernel has VRF devices", False: f"; {NO_VRF_DEVICES}", None: ""}[self.vrf_devices]
        return f"{NAMES[self.backend]} ({self.why}{kernel_says})"


def choose(
    fabric: Fabric,
    override: str | None = None,
    user_files: dict[str, dict[str, str]] | None = None,
    where: dict[str, str] | None = None,
    probe: Callable[[str], bool] = probe_vrf_devices,
) -> Choice:
    """The lab's backend, and why; TopologyError naming CONFIG_NET_VRF and every input that
    needs VRF devices when this kernel has none (`probe`: asks the kernel, in a throwaway namespace)."""
    backend, why = wanted(fabric, override)
    needs = device_needs(fabric, user_files or {}, where)
    has = probe(fabric.name) if backend == DEVICE or needs else None
    if has is not False:
        return Choice(backend, why, has)
    if backend != DEVICE:
        return Choice(backend, why, has, tuple(_warning(p) for p in needs))
    at = ("--vrf-backend", "") if override else (fabric.source, "defaults.vrf_backend")
    drop = "--vrf-backend device" if override else "vrf_backend: device"
    raise TopologyError(
        [
            Problem(
                *at, f"the device VRF backend needs Linux VRF devices, but {NO_VRF_DEVICES}; {INSTEAD}: drop `{drop}`"
            )
        ]
    )


def config_warnings(
    fabric: Fabric,
    user_files: dict[str, dict[str, str]],
    where: dict[str, str],
    probe: Callable[[str], bool] = probe_vrf_devices,
) -> tuple[str, ...]:
    """The warnings of `choose` for new configs of a running lab (`twin apply LAB DIR`): a VRF of
    theirs that no tenant makes, on a kernel without VRF devices (asked only when there is one)."""
    needs = [p for p in device_needs(fabric, user_files, where) if not p.path]  # the files', not the execs'
    return tuple(_warning(p) for p in needs) if needs and probe(fabric.name) is False else ()


def _warning(p: Problem) -> str:
    """What will happen to input that needs a VRF device this kernel lacks, and the way out."""
    where = f"{p.file}: {p.path}: " if p.path else f"{p.file}: "
    if p.path:  # an exec command
        happens = "the command will fail and be reported, and the lab goes on (--strict-exec: it ends the bring-up)"
    else:  # a frr.conf VRF
        happens = "zebra keeps that VRF inactive: nothing of it runs"
    return (
        f"{where}{p.message}, but {NO_VRF_DEVICES}: {happens}; {INSTEAD}: make the VRF a tenant of the "
        "topology (twin makes its namespace and FRR's VRF)"
    )
