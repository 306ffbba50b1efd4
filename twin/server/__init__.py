"""`twin serve`: a shared twin behind an authenticated REST API (`/v1`, OpenAPI at /openapi.json).

People and CI create, change, verify, rehearse, snapshot and remove labs through it, with owners
(tokens an admin issues: `auth`), quotas and the host's admission (`quotas`), expiry (`reaper`),
long work as operations with progress events (`operations`), and state that survives a restart
(`store`, SQLite). Every body is read by twin's one reader (`bodies`); every error is problem JSON
(`problems`). It drives labs through `twin.Lab` and the stages the CLI uses (`labwork`): the
server adds no second way of doing anything.
"""

from twin.server.auth import Principal, duration, issue
from twin.server.core import Core, Settings
from twin.server.quotas import Limits, size
from twin.server.serve import logs, serve
from twin.server.store import Store

__all__ = [
    "Core",
    "Limits",
    "Principal",
    "Settings",
    "Store",
    "app",
    "auth",
    "duration",
    "issue",
    "logs",
    "serve",
    "size",
]
