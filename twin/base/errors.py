"""Errors a user can act on. Each one says what failed and what to do."""

from __future__ import annotations

import errno
import signal
from dataclasses import dataclass

from twin.base.missing import lines, to_dicts


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


class TwinError(Exception):
    """Base class: a failure `twin` reports as one clear line."""


def printable(text: str) -> str:
    """`text` with every control character and lone surrogate escaped: safe on one line of a terminal."""
    if text.isprintable():
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            pass
    return "".join(c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF else repr(c)[1:-1] for c in text)


class Stopped(KeyboardInterrupt):
    """A command stopped by SIGTERM or SIGHUP, taken as Ctrl-C is (`twin.cli.common.stops_as_interrupt`):
    what handles an interrupt (a bring-up removing what it made, apply rolling back) handles it."""

    def __init__(self, signum: int, name: str):
        self.signum = signum
        super().__init__(name)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file a user gave (a topology, a change, a configs file...)."""

    file: str
    path: str  # place in the document, e.g. "nodes.leaf1.asn"
    message: str
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based, where a parser knows it

    def __post_init__(self) -> None:  # whatever a file held, a problem prints on its lines
        for name in ("file", "path", "message"):
            object.__setattr__(self, name, printable(str(getattr(self, name))))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        where += f":{self.column}" if self.line and self.column else ""
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class TopologyError(TwinError):
    """A topology file is invalid. Carries every problem found, not just the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems, key=lambda p: (p.file, p.line or 0, p.path))
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in {self.problems[0].file}" if n else "invalid topology"
        super().__init__(head + "\n" + "\n".join(f"  {p}" for p in self.problems))


class ConfigError(TwinError):
    """FRR refuses a user's config (or a daemon it enables is not in the image); nothing was created."""

    def __init__(self, source: str, problems: list[Problem]):
        self.problems = sorted(problems, key=lambda p: (p.file, p.line or 0))
        n = len(self.problems)
        super().__init__(
            f"FRR refuses the configs in {source} ({n} problem{'s' if n != 1 else ''}); nothing "
            "was created:\n" + "\n".join(f"  {p}" for p in self.problems)
        )


class CommandError(TwinError):
    """A command in a node (or on the host) failed; carries command, exit code and output."""

    def __init__(self, where: str, cmd: list[str], rc: int, stdout: str, stderr: str):
        self.where, self.cmd, self.rc, self.stdout, self.stderr = where, cmd, rc, stdout, stderr
        out = "\n".join(s for s in (stdout.strip(), stderr.strip()) if s)
        how = (
            f"exited {rc}"
            if rc >= 0
            else f"was killed by {_signal_name(-rc)} (its helper process died; twin did not stop it)"
        )
        shown = " ".join(c.replace("\n", "; ") for c in cmd)  # a script's lines on the error's one line
        super().__init__(f"{where}: `{shown}` {how}" + (f":\n{out}" if out else ""))


class ConvergenceTimeout(TwinError):
    """The fabric did not reach the intended state before the deadline."""

    def __init__(self, what: str, seconds: float, missing: list[str], causes: list[str] | None = None):
        self.what, self.seconds, self.missing, self.causes = what, seconds, missing, causes or []
        # host-level causes (twin.lifecycle.hostlimits.host_causes) come before what is missing, then
        # the missing items by node and kind, a dozen in full (twin.base.missing)
        others = f" (+{len(self.causes) - 1} more)" if len(self.causes) > 1 else ""
        cause = f"; host-level cause: {self.causes[0]}{others}" if self.causes else ""
        super().__init__(
            f"{what} not reached after {seconds:.0f}s{cause}; still missing ({len(missing)}):\n"
            + "".join(f"  ! {c}\n" for c in self.causes)
            + "\n".join(f"  {line}" for line in lines(missing))
        )

    def groups(self) -> list[dict]:
        """What is missing by node and kind (`--json`, JUnit)."""
        return to_dicts(self.missing)

    def with_causes(self, causes: list[str]) -> "ConvergenceTimeout":  # issue 19
        return ConvergenceTimeout(self.what, self.seconds, self.missing, causes) if causes else self


class StageTimeout(ConvergenceTimeout):
    """A command's deadline (an explicit --timeout, from its start) passed in a stage before the
    barrier (containers, links, configs): which stage, how far it got, and what each unit of its
    work (a node, a link) was still waiting for, the longest waiting first."""

    def __init__(self, deadline: str, seconds: float, stage: str, progress: str, waiting: list[str]):
        self.stage, self.progress = stage, progress
        first = waiting[0] if waiting else "nothing under way (the stage's own wait)"
        more = f" (+{len(waiting) - 1} more)" if len(waiting) > 1 else ""
        shown = waiting[:40]
        TwinError.__init__(
            self,
            f"{deadline} passed after {seconds:.0f}s in stage {stage} ({progress}); it was waiting for "
            f"{first}{more}"
            + "".join(f"\n  - {w}" for w in shown)
            + (f"\n  ... and {len(waiting) - len(shown)} more" if len(waiting) > len(shown) else ""),
        )
        self.what, self.seconds, self.missing, self.causes = f"stage {stage}", seconds, waiting, []

    def with_causes(self, causes: list[str]) -> "ConvergenceTimeout":
        return self


class DeadlinePassed(TwinError):
    """A call that was not begun: the command's deadline had passed (`twin.base.wait.cut`)."""


class LabStateError(TwinError):
    """The lab is not in a state that allows the operation (already up, not found...)."""


class LabNameError(TwinError):
    """A lab name that does not follow the rule; nothing was touched."""


class AlreadyUp(LabStateError):
    """`up` on a lab whose containers exist: nothing was touched."""


class ChangeRefused(TwinError):
    """The change was not applied, and the lab was not touched. Carries every reason."""

    def __init__(self, source: str, reasons: list[str]):
        self.reasons = reasons
        super().__init__(
            f"change {source} refused ({len(reasons)} problem{'s' if len(reasons) != 1 else ''}); "
            "the lab was not touched:\n" + "\n".join(f"  {r}" for r in reasons)
        )


class ApplyFailed(TwinError):
    """The change failed half way and was rolled back; `problems` lists what could not be restored."""

    def __init__(self, source: str, stage: str, error: str, problems: list[str]):
        self.stage, self.error, self.problems = stage, error, problems
        self.rolled_back = not problems
        if not problems:
            head = f"change {source} failed half way and was rolled back to the previous intent:"
            back = "rollback: done: the lab runs its previous intent again (confirmed by the barrier)"
        else:
            head = f"change {source} failed half way; its rollback is INCOMPLETE:"
            back = (
                f"rollback: INCOMPLETE, {len(problems)} thing(s) could not be restored (`twin down` and "
                "`twin up` make the lab again):\n" + "\n".join(f"    - {p}" for p in problems)
            )
        super().__init__(f"{head}\n  failed (stage {stage}): {error}\n  {back}")


class RuntimeFailed(TwinError):
    """The container engine (Docker) refused or failed a call; carries its answer."""


class NodeGone(RuntimeFailed, OSError):
    """A node's container or network namespace is not there (any more): stopped, killed or removed.
    Also an OSError, as a namespace that vanished under a reader always was."""

    def __init__(self, message: str, errno_: int = 2):  # ENOENT
        OSError.__init__(self, errno_, message)

    def __str__(self) -> str:
        return str(self.strerror)


class NamespaceRefused(TwinError):
    """A namespace a node offers that twin will not enter: a link, or another namespace than the one it
    must be (the host's, another node's or tenant's). The message names the node and what it found."""


class NetlinkFailed(TwinError):
    """The kernel refused a netlink request; `code` is its errno (callers branch on it, never on text)."""

    def __init__(self, code: int, message: str):
        self.code = code
        super().__init__(message)


class NetlinkTimeout(NetlinkFailed):
    """A netlink request the kernel did not answer within its deadline: abandoned, its socket closed.
    What it would have read is not known yet (the barrier reads it again next round)."""

    def __init__(self, message: str):
        super().__init__(errno.ETIMEDOUT, message)
