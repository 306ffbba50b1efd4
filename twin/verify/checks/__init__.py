"""The user's own checks (a checks file, a topology's `checks:`), judged on the running lab.

    report = twin.verify.run(lab, checks=load_checks("checks.yml", lab.fabric).checks)

Positive checks (a session is up, a route is there, a ping answers, RoCE is
delivered, FRR's JSON contains this, a command says that) are looked at until
they hold or their `timeout` passes. Negative checks (a route stays out, a
ping fails, RoCE is blocked, a session is down, at most N prefixes, a command
never says that) could pass only because the lab is not up yet, so they wait
for the convergence barrier first, and must then hold at every look over
their `window`. Each check becomes one Check of the group `checks`, with what
was seen in its message and data; the commands behind it are recorded under
its name when evidence is recorded (`twin.runtime.exec.recording`).
"""

from twin.verify.checks.runner import GROUP, run

__all__ = ["GROUP", "run"]
