"""The server's state directory as an operation's work sees it, in the server and in an
operation's worker process alike (`worker`): the database and the directories beside it.

    state.db          users, token hashes, labs, operations and events, snapshots (`store`)
    sources/<id>/     what a request brought for a lab: its topology, its configs, its changes
    snapshots/<id>.tar.gz
    baselines/<lab>.json
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

from twin.server.store import Store


class Home:
    def __init__(self, root: Path):
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        root.chmod(0o700)
        self.root = root
        self.store = Store(root / "state.db")

    def where(self, kind: str) -> Path:
        d = self.root / kind
        d.mkdir(exist_ok=True, mode=0o700)
        return d

    def new_source(self) -> Path:
        """A directory of its own for what one request brought."""
        d = self.where("sources") / secrets.token_hex(8)
        d.mkdir(mode=0o700)
        return d

    def drop_source(self, d: str | Path | None) -> None:
        """A request's directory removed (only one directly under sources/)."""
        if not d:
            return
        p = Path(d)
        if p.parent == self.where("sources") and p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
