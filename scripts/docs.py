"""Write the generated pages of the documentation site (`make docs` runs it before `mkdocs build`):
docs/reference/commands.md from the CLI's help, docs/index.md from README.md (the front page, its
links made the site's). Unit tests compare both files with what this makes now."""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def index_md(readme: str) -> str:
    """README.md as the site's front page: `docs/x.md` links are `x.md` there."""
    text = re.sub(r"\]\(docs/", "](", readme)
    return "<!-- generated from README.md by `make docs`: edit README.md -->\n" + text


def pages() -> dict[Path, str]:
    from twin.cli import reference

    return {ROOT / "docs/reference/commands.md": reference.markdown(),
            ROOT / "docs/index.md": index_md((ROOT / "README.md").read_text())}


if __name__ == "__main__":
    for path, text in pages().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
