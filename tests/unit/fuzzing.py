"""What the fuzzing of every front door shares: run a reader on hostile input within a time and
memory bound, and hold its outcome to twin's error style (test_fuzz_doors, test_fuzz_files)."""

from __future__ import annotations

import os
import time
import tracemalloc
from typing import Any, Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from twin.base.errors import TopologyError, TwinError

SECONDS = 2.0
PEAK_BYTES = 200 * 1024 * 1024


def fuzz(examples: int):
    """Deterministic (derandomize) so CI is stable; TWIN_FUZZ_SCALE=N runs N times as many (and,
    not derandomized, other ones each time) for a longer hunt by hand."""
    scale = int(os.environ.get("TWIN_FUZZ_SCALE", "1"))
    return settings(
        derandomize=scale == 1,
        database=None,
        deadline=None,
        max_examples=examples * scale,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


# JSON and YAML trouble, spliced into a good file's text
SNIPPETS = [
    "[" * 80,
    "{" * 80,
    "]",
    "}",
    ",",
    ":",
    '"',
    "'",
    "\\",
    "NaN",
    "-Infinity",
    "1e999",
    "9" * 5000,
    "\x00",
    "\x1b",
    "\x7f",
    "\ufeff",
    "\u2028",
    "\x85",
    "\\u0000",
    "\\ud800",
    '{"a": 1, "a": 2}',
    "null",
    "true",
    "[]",
    "{}",
    "é",
    "\t",
    "\r",
    "\n",
    "&a ",
    "*a",
    "!!python/object:os.system ",
    "<<: ",
    "---\n",
    "# ",
    "- ",
    "//",
    "/*",
    "--",
    "->",
    ";",
    "=",
    "subgraph",
]
NAMES = [
    "spine1",
    "spine2",
    "leaf1",
    "leaf2",
    "dpu1",
    "h1",
    "host1",
    "r1",
    "r2",
    "Leaf1",
    "",
    "..",
    "a b",
    "x" * 70,
    "é",
    "leaf1\n",
    "-",
    "0",
]
SCALARS = NAMES + [0, 1, -1, 65000, 4294967296, 2**64, 1.5, True, False, None]


def scalars():
    return st.sampled_from(SCALARS) | st.text(max_size=8)


def json_values(leaves=None):
    return st.recursive(
        leaves or scalars(),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=6), inner, max_size=4)
        ),
        max_leaves=10,
    )


@st.composite
def spliced(draw, seeds: list[str]):
    """A good file's text with trouble spliced in, cut short, or re-encoded."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.sampled_from([0, 0, 0, 1, 10]))
        text = text[:at] + draw(st.sampled_from(SNIPPETS) | st.text(max_size=5)) + text[at + cut :]
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-8", "utf-16", "latin-1"]))
    return text.encode(encoding, "surrogatepass" if encoding.startswith("utf") else "replace")


def bounded(call: Callable[[], Any]) -> tuple[Any, float, int]:
    """(outcome: the value or the TwinError raised, seconds, peak bytes)."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        outcome = call()
    except TwinError as e:
        outcome = e
    finally:
        elapsed = time.monotonic() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return outcome, elapsed, peak


def check_cleanly(call: Callable[[], Any], ok: type | tuple[type, ...], files: tuple[str, ...] = ()) -> Any:
    """`call()` returns an `ok` or raises a TwinError in twin's style, within the bounds: any other
    exception fails the test with its traceback. `files`: the prefixes a problem's file may have."""
    outcome, elapsed, peak = bounded(call)
    if os.environ.get("TWIN_FUZZ_SHOW"):
        print("FUZZ", type(outcome).__name__, str(outcome).splitlines()[-1][:150] if str(outcome) else "")
    assert elapsed < SECONDS, f"took {elapsed:.1f}s"
    assert peak < PEAK_BYTES, f"took {peak / 1e6:.0f} MB"
    if isinstance(outcome, TwinError):
        for line in str(outcome).splitlines():
            readable(line)
            assert len(line) <= 2000, "a message line is bounded"
        for p in getattr(outcome, "problems", []):
            assert p.message, "a problem says what is wrong"
            assert not files or p.file.startswith(files) or p.file.startswith("--"), p.file
            assert len(p.message) <= 1000 and len(p.path) <= 200, "values in messages are cut"
            readable(p.message), readable(p.path)
        if isinstance(outcome, TopologyError):
            assert outcome.problems, "a TopologyError names its problems"
    else:
        assert isinstance(outcome, ok), type(outcome)
    return outcome


def readable(text: str) -> None:
    assert text.isprintable(), f"control characters are escaped: {text!r}"
    text.encode("utf-8")  # no lone surrogate: it could not be printed
