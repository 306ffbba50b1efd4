"""Which image each node runs (pure): its own, as the topology (or a containerlab file) names it,
where the engine has it, else twin's node image.

`twin up --images MODE` (over the topology's `defaults.images`):
- auto (the default): a node's own image where the engine has it (pulled or built), else twin's
  node image, said once with the images the engine lacks;
- own: every node's own image; one the engine lacks is refused before anything is made;
- twin: twin's node image for every node (FRR 10.3, the tools twin itself runs in a node).

A node on its own image starts as the image starts (`twin.runtime.ownimage`): an FRR image starts
its FRR, so twin's start of FRR is left out for it; one built from twin's node image starts twin's way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from twin.base.errors import TwinError
from twin.runtime import ImageFacts
from twin.topology.model import Fabric
from twin.topology.problems import listing

MODES = ("auto", "own", "twin")
DEFAULT = "auto"


@dataclass
class Choice:
    own: dict[str, str] = field(default_factory=dict)  # node -> its own image, which it runs
    starts_itself: set[str] = field(default_factory=set)  # of them, the ones their image starts (not twin)
    notes: list[str] = field(default_factory=list)

    def fabric(self, fabric: Fabric) -> Fabric:
        """`fabric` as the runtime makes it: each node's image the one it runs (None: twin's node image)."""
        return fabric.model_copy(
            update={
                "nodes": {n: node.model_copy(update={"image": self.own.get(n)}) for n, node in fabric.nodes.items()}
            }
        )


def wanted(fabric: Fabric) -> dict[str, list[str]]:
    """image -> the nodes that name it, in the fabric's order."""
    out: dict[str, list[str]] = {}
    for n, node in fabric.nodes.items():
        if node.image:
            out.setdefault(node.image, []).append(n)
    return out


def mode_of(fabric: Fabric, override: str | None = None) -> str:
    return override or fabric.images or DEFAULT


def choose(fabric: Fabric, mode: str, facts: dict[str, ImageFacts]) -> Choice:
    """The image of every node under `mode`, from what the engine has (`facts`: image -> facts);
    TwinError for `own` when the engine lacks one, naming each with its nodes."""
    want = wanted(fabric)
    if mode not in MODES:
        raise TwinError(f"--images {mode!r} is not a mode; modes: {', '.join(MODES)}")
    if not want:
        return Choice()
    if mode == "twin":
        return Choice(notes=[f"every node runs twin's node image instead of {_images(want)} (--images twin)"])
    lacking = {img: nodes for img, nodes in want.items() if not facts.get(img, ImageFacts(False)).present}
    if mode == "own" and lacking:
        raise TwinError(
            f"lab {fabric.name!r}: --images own, but this engine has no {_images(lacking)}; "
            f"`docker pull IMAGE` (or `docker build -t IMAGE`), or --images auto to run twin's node "
            "image for them"
        )
    own = {n: img for img, nodes in want.items() if img not in lacking for n in nodes}
    notes = [f"own image {img}: {listing(nodes)}" for img, nodes in want.items() if img not in lacking]
    if lacking:
        notes.append(
            f"twin's node image instead of {_images(lacking)}: not on this engine (no registry is "
            "asked; `docker pull` or build it, then `twin up` again; --images own insists)"
        )
    return Choice(own, {n for n, img in own.items() if not facts[img].twin}, notes)


def resolve(fabric: Fabric, mode: str | None, facts_of: Callable[[set[str]], dict[str, ImageFacts]]) -> Choice:
    """`choose` under `mode` (else the topology's, else auto), asking `facts_of` (the runtime's
    `image_facts`) about the images the fabric names only when they matter."""
    mode = mode_of(fabric, mode)
    want = wanted(fabric)
    return choose(fabric, mode, facts_of(set(want)) if want and mode != "twin" else {})


def _images(by_image: dict[str, list[str]]) -> str:
    return "; ".join(f"{img} ({listing(nodes)})" for img, nodes in by_image.items())
