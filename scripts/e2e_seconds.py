"""Write tests/e2e_seconds.json (each e2e module's seconds, setup and teardown included) from the JUnit
report of a `make test` run (`make test PYTEST_ARGS=--junitxml=report.xml`), so the next run starts
the longest units of work first (tests/parallel.py)."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "e2e_seconds.json"


def module_of(classname: str) -> str:
    """tests.e2e.test_x (or tests.e2e.test_x.TestY) -> tests/e2e/test_x.py"""
    parts = classname.split(".")
    last = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
    return "/".join(parts[: last + 1]) + ".py"


def main(report: str) -> int:
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(report).getroot().iter("testcase"):
        module = module_of(case.get("classname", ""))
        if module.startswith("tests/e2e/"):
            seconds[module] += float(case.get("time", 0))
    OUT.write_text(json.dumps({m: round(s, 1) for m, s in sorted(seconds.items())}, indent=1) + "\n")
    print(f"{OUT}: {len(seconds)} modules, {sum(seconds.values()):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]) if len(sys.argv) == 2 else "usage: e2e_seconds.py JUNIT.xml")
