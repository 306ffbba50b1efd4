"""twin's version: the installed distribution's (a wheel's, or the checkout's editable install), and
where this twin is (a checkout or site-packages), for `twin --version` and `twin doctor`."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

try:
    VERSION = metadata.version("twin")
except metadata.PackageNotFoundError:  # a checkout on sys.path, never installed
    VERSION = "unknown (not installed)"
WHERE = str(Path(__file__).resolve().parent.parent)  # the twin package, not this base/


def text() -> str:
    """One line: the version and where twin runs from."""
    return f"twin {VERSION} ({WHERE})"
