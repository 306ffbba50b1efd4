"""The runtimes a lab can run on, by name, in one table: twin's own through the Docker SDK
(`docker`, the default) and the containerlab CLI on twin's export (`containerlab`). A runtime
is a class implementing `twin.runtime.base.Runtime` under its `name`; `make_runtime` makes one.
Which runtime a given lab runs on (the one that made it) is the lab's to say
(`twin.lifecycle.state.runtime_of`), decided there once.
"""

from __future__ import annotations

from twin.base.errors import TwinError
from twin.runtime.base import Runtime
from twin.runtime.containerlab import ContainerlabRuntime
from twin.runtime.docker import DockerRuntime

DEFAULT = DockerRuntime.name
RUNTIMES: dict[str, type[DockerRuntime]] = {r.name: r for r in (DockerRuntime, ContainerlabRuntime)}


def make_runtime(name: str | None, removing: bool = False) -> Runtime:
    """The runtime called `name` (docker, containerlab); docker when None. `removing`: one that
    takes a lab down, whether or not the tool that made it is installed now."""
    cls = RUNTIMES.get(name or DEFAULT)
    if cls is None:
        raise TwinError(f"unknown runtime {name!r}; runtimes: {', '.join(RUNTIMES)}")
    return ContainerlabRuntime(removing=True) if removing and cls is ContainerlabRuntime else cls()
