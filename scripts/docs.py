"""The generated pages of the documentation site, made at build time so they cannot drift:
the command reference (reference/commands.md) from the CLI's help, and the front page
(index.md) from README.md, its links made the site's. mkdocs.yml loads this file as a hook
(`on_files`); `python scripts/docs.py DIR` writes the two pages into DIR to read them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def index_md(readme: str) -> str:
    """README.md as the site's front page: `docs/x.md` links are `x.md` there."""
    return re.sub(r"\]\(docs/", "](", readme)


def pages() -> dict[str, str]:
    """Site path -> content of every generated page."""
    from twin.cli import reference

    return {"reference/commands.md": reference.markdown(), "index.md": index_md((ROOT / "README.md").read_text())}


def on_files(files, config):
    """mkdocs hook: the generated pages join the site's files (none of them is in docs/)."""
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "site-pages")
    for path, text in pages().items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(text)
        print(f"wrote {out / path}")
