"""Subset comparison of FRR JSON, in the spirit of topotests' json_cmp.

Every key of `expected` must be in `actual` with a matching value; dicts match
recursively, lists match when each expected item matches a distinct actual item
(order ignored), other values match by equality. Returns readable differences,
each with its JSON path; empty means `actual` contains `expected`.
"""

from __future__ import annotations

from typing import Any


def subset(expected: Any, actual: Any, path: str = "") -> list[str]:
    here = path or "."
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{here}: expected an object, got {_short(actual)}"]
        diffs = []
        for k, v in expected.items():
            if k not in actual:
                diffs.append(f"{path}.{k}: missing (expected {_short(v)})")
            else:
                diffs += subset(v, actual[k], f"{path}.{k}")
        return diffs
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{here}: expected a list, got {_short(actual)}"]
        diffs, free = [], list(actual)
        for i, item in enumerate(expected):
            match = next((a for a in free if not subset(item, a)), None)
            if match is None:
                diffs.append(f"{path}[{i}]: no item matches {_short(item)} (have {_short(actual)})")
            else:
                free.remove(match)
        return diffs
    if expected != actual:
        return [f"{here}: expected {_short(expected)}, got {_short(actual)}"]
    return []


def _short(v: Any, limit: int = 120) -> str:
    s = repr(v)
    return s if len(s) <= limit else s[:limit] + "..."
