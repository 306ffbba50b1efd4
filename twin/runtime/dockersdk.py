"""The Docker SDK, loaded without its SSH transport unless the engine is reached over SSH.

`import docker` loads paramiko (and paramiko loads `invoke`) for `ssh://` engines whether or not one
is used: ~0.1 CPU-s of every twin command's start, most of what the SDK costs to load (measured in
docs/performance.md). twin talks to the local engine's socket; the SDK loads its SSH transport in a
`try` and goes on without it, so paramiko is kept out while the SDK loads (and allowed again after:
a script of the user's may still import it). With DOCKER_HOST=ssh://... the SDK loads as it is.
This module is the first thing `twin.runtime` imports, before any room of it imports `docker`.
"""

from __future__ import annotations

import os
import sys

if "docker" not in sys.modules and not os.environ.get("DOCKER_HOST", "").startswith("ssh://"):
    _held = "paramiko" not in sys.modules
    if _held:
        sys.modules["paramiko"] = None  # type: ignore[assignment]  # an ImportError, which the SDK expects
    try:
        import docker  # noqa: F401
    finally:
        if _held:
            del sys.modules["paramiko"]
