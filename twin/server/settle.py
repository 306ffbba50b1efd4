"""A lab whose operation was cut off (the server stopped, or the operation's worker process
died) left whole or removed, never half made:
- a create (or a restore, a delete, an expiry): the lab is removed (`twin down`'s cleanup:
  containers, links, namespaces, its directory);
- a change (apply, rehearse, fault, a proof): the lab is kept if it holds its intent
  (`twin status` healthy), else removed, and its record says why;
- a read (verify, plan, a baseline, a snapshot): the lab is as it was.
"""

from __future__ import annotations

from twin.lab import Lab
from twin.server.home import Home

KEEPS = ("verify", "plan", "baseline", "baseline-compare", "snapshot")  # read-only: the lab is as it was


def settle(home: Home, name: str, kind: str) -> str:
    """Lab `name` after its `kind` operation was cut off, settled; what was done, as a phrase."""
    row = home.store.lab(name)
    if kind in KEEPS and row is not None:
        return "the lab was only read, and is as it was"
    if kind in ("create", "restore", "delete", "expire") or row is None:
        return _remove(home, name, row, "removed" if kind != "delete" else "removal finished")
    healthy = Lab(name).status().healthy
    if healthy:
        home.store.set_lab(name, state="up", error="")
        return "the lab holds its intent (twin status: healthy) and is kept"
    return _remove(home, name, row, "it did not hold its intent (half changed): removed")


def _remove(home: Home, name: str, row: dict | None, what: str) -> str:
    removed = Lab(name).down()
    home.store.drop_lab(name)
    home.drop_source(row["source"] if row else None)
    return f"{what} ({len(removed)} containers)"
