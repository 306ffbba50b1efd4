"""What a lab's config dialects declare beyond the topology's intent, judged on the running nodes
(issue 44): each registered dialect's checks (`Dialect.checks`): NVUE's BFD sessions Up and BGP
timers as set (`twin.nvue.judge`). No check where no node declares any."""
from __future__ import annotations

from twin.config.dialect import dialects
from twin.lifecycle.context import LabContext
from twin.verify.result import Check

GROUP = "protocols"


def run(ctx: LabContext) -> list[Check]:
    return [c for d in dialects() for c in d.checks(ctx)]
