"""What every stage of twin's data path stands on, and none of them owns: its errors (`errors`),
what a failed wait misses, grouped (`missing`), its deadlines and the one wait on them (`timeouts`,
`wait`), an interrupt never lost (`interrupt`), the stages a long command says it is in (`stages`),
the reader of users' files (`safeopen`), JUnit reports (`junit`) and its version (`version`). It
imports nothing else of twin's."""

__all__ = [
    "errors",
    "missing",
    "timeouts",
    "wait",
    "interrupt",
    "stages",
    "safeopen",
    "junit",
    "version",
]  # each offered whole
