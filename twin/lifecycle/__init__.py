"""A lab's life: its state on disk (`state`), its lock (`locks`), bring-up (`bringup`: create, wire,
configure), the convergence barrier (`barrier`), the running-lab context every
later stage works on (`context`), status against intent (`status`), removal
of exactly what the lab owns (`cleanup`), and `twin up` as an ordered list of named stages (`pipeline`)."""

from twin.lifecycle.bringup import configure_node, wait_vnis
from twin.lifecycle.cleanup import patient
from twin.lifecycle.context import LabContext, LabLike, context_of
from twin.lifecycle.status import LabStatus, lab_status
from twin.lifecycle.vrfbackend import Choice

__all__ = [
    "admission",
    "barrier",
    "bringup",
    "Choice",
    "cleanup",
    "configure_node",
    "context_of",
    "daemon",
    "doctor",
    "generic",
    "hostlimits",
    "imagechoice",
    "lab_status",
    "LabContext",
    "LabLike",
    "LabStatus",
    "locks",
    "mgmtnet",
    "patient",
    "pipeline",
    "service",
    "state",
    "vrfbackend",
    "wait_vnis",
]
