import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite golden files from the current output instead of comparing")


@pytest.fixture
def golden(request):
    """compare(path, text): assert text equals the golden file (or rewrite it with --update-golden)."""
    update = request.config.getoption("--update-golden") or os.environ.get("TWIN_UPDATE_GOLDEN") == "1"

    def compare(path: Path, text: str) -> None:
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return
        assert path.exists(), f"golden file {path} is missing; run pytest --update-golden"
        assert text == path.read_text(), f"output differs from golden file {path.relative_to(ROOT)}"

    return compare
