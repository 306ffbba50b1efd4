"""`twin verify LAB --prove`: verify proves itself, on the running lab.

`twin verify` is only as good as the mistakes it notices. Mutation testing for a
network: every element of the lab's intent that carries a guarantee (every rule of
every host port, each VXLAN device and its VNI, route targets, type-5 advertisement,
sessions, loopbacks, gateways, ARP suppression, `tos inherit`, MTUs, ECMP, a port's
membership...) is broken in turn through twin's own mechanisms, the verify groups that
must notice run, and the element is put back from the node's rendered state before the
next one. A miss is a bug in verify; an element that guarantees nothing is not rendered
(or, where a lab's shape makes it moot, listed as exempt with the reason).

    proof = twin.prove.prove(Lab.open("aipod"))
    print(proof.score)                  # "caught 174 of 174"
    assert proof.passed, [o.element.id for o in proof.misses()]

Modules: element (the data), ports / kernel_side / frr_side (what a lab's intent and the
configs its nodes run hold: twin's rendering, or a node's own configuration's, a dialect's),
router_side (a router of your config), run (break, judge, restore; with each registered
dialect's elements: `twin.config.dialect`), report (table data, JSON, JUnit). A dialect builds
its elements on element, frr_side and kernel_side, offered whole.
"""

from __future__ import annotations

from twin.prove.element import Element, Exempt
from twin.prove.report import Outcome, Proof, write_junit
from twin.prove.run import elements, prove

__all__ = [
    "prove",
    "elements",
    "Element",
    "Exempt",
    "Outcome",
    "Proof",
    "write_junit",
    "element",
    "frr_side",
    "kernel_side",
]
