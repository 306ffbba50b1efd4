"""Which VRF backend a lab runs on this host, decided before anything is made.

The netns backend is the default on every kernel (`twin.config.backend`); the device
backend is what a topology (`defaults.vrf_backend: device`) or `twin up --vrf-backend
device` asks for. Either way, the kernel is asked (`twin.runtime.kernel.vrf_devices`)
only when something needs Linux VRF devices: the device backend, or the user's own
input (an `exec` command that adds a VRF device, a frr.conf VRF that no tenant makes).
On a kernel without them (CONFIG_NET_VRF), every such thing is refused at once, with
what twin offers instead, not found failing deep in bring-up.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from twin.config.backend import DEVICE, INSTEAD, NAMES, NO_VRF_DEVICES, Backend, device_needs, wanted
from twin.errors import Problem, TopologyError
from twin.runtime import kernel
from twin.topology.model import Fabric


@dataclass(frozen=True)
class Choice:
    backend: Backend
    why: str                     # what chose it
    vrf_devices: bool | None     # what the kernel offers (None: nothing needed to ask)

    def __str__(self) -> str:
        kernel_says = {True: "; this kernel has VRF devices", False: f"; {NO_VRF_DEVICES}", None: ""}[self.vrf_devices]
        return f"{NAMES[self.backend]} ({self.why}{kernel_says})"


def choose(fabric: Fabric, override: str | None = None, user_files: dict[str, dict[str, str]] | None = None,
           where: dict[str, str] | None = None, probe: Callable[[str], bool] = kernel.vrf_devices) -> Choice:
    """The lab's backend, and why; TopologyError naming CONFIG_NET_VRF and every input that
    needs VRF devices when this kernel has none (`probe`: asks the kernel, in a throwaway namespace)."""
    backend, why = wanted(fabric, override)
    needs = device_needs(fabric, user_files or {}, where)
    has = probe(fabric.name) if backend == DEVICE or needs else None
    if has is not False:
        return Choice(backend, why, has)
    problems = [Problem(p.file, p.path, f"{p.message}, but {NO_VRF_DEVICES}; {INSTEAD}: make the VRF a tenant of "
                                        "the topology (twin makes its namespace and FRR's VRF)") for p in needs]
    if backend == DEVICE:
        at = ("--vrf-backend", "") if override else (fabric.source, "defaults.vrf_backend")
        drop = "--vrf-backend device" if override else "vrf_backend: device"
        problems.append(Problem(*at, f"the device VRF backend needs Linux VRF devices, but {NO_VRF_DEVICES}; "
                                     f"{INSTEAD}: drop `{drop}`"))
    raise TopologyError(problems)
