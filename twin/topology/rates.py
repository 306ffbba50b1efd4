"""Rates in a topology: "100mbit", "1.5gbit", "500kbit", "25Mbit/s" (bits per second) or
"20000pps", "20kpps" (packets per second), parsed with a short reason when they are not."""

from __future__ import annotations

import re

from twin.topology.model import Rate
from twin.topology.problems import quoted

RATE_RULE = 'a rate like "100mbit", "1.5gbit", "500kbit" (bits per second) or "20000pps", "20kpps"'
_RATE = re.compile(r"(?P<n>[0-9]{1,9}(\.[0-9]{1,3})?)\s?(?P<k>[kmg]?)(?P<u>bit(/s)?|bps|pps)", re.IGNORECASE)
_SCALE = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3}
BIT_MIN, BIT_MAX = 8_000, 100 * 1000**3  # 1 kB/s .. 100 Gbit/s
PPS_MIN, PPS_MAX = 1, 100_000_000


def parse_rate(text: object) -> tuple[Rate | None, str]:
    """(Rate, "") or (None, why not)."""
    m = _RATE.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None:
        return None, f"{quoted(text)} is not {RATE_RULE}"
    value = round(float(m["n"]) * _SCALE[m["k"].lower()])
    unit = "pps" if m["u"].lower() == "pps" else "bit"
    low, high = (PPS_MIN, PPS_MAX) if unit == "pps" else (BIT_MIN, BIT_MAX)
    if not low <= value <= high:
        shown = f"{value} packets/s" if unit == "pps" else f"{value} bit/s"
        return None, (
            f"{quoted(text)} is {shown}: a rate is {low}-{high} {'packets' if unit == 'pps' else 'bits'} per second"
        )
    return Rate(value=value, unit=unit), ""
