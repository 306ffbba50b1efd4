"""Docker's engine as the unit tests' fakes answer it."""

from __future__ import annotations


def labelled(labels: dict[str, str], filters: list[str]) -> bool:
    """Docker's `label` filter: every entry holds, `key` by the label being there, `key=value` by its value."""
    return all(k in labels and (not eq or labels[k] == v) for k, eq, v in (f.partition("=") for f in filters))
