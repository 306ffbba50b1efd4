"""`twin` command line: thin commands over `twin.Lab` and the stages below it, one module
per command group (lab, day2, faults, checks, baseline, inventory, lint), one error style (`common`).
Progress goes to stderr, results to stdout; exit codes: 0 success, 1 failure."""

from twin.cli import (  # noqa: F401  (each registers its commands; remote: those `twin --server URL` runs)
    baseline,
    checks,
    day2,
    doctor,
    faults,
    interop,
    inventory,
    lab,
    lint,
    observe,
    remote,
    server,
    traffic,
    validate,
)
from twin.cli.common import main
from twin.cli.completion import attach

attach(main)  # lab and node names for the shell's completion

__all__ = ["main"]
