"""Every file a user hands twin, read the same way: bytes -> text, within the limits of its format.

Each format (a topology, a containerlab file, an NVIDIA Air file, a clone's LLDP JSON
and cable CSV, a checks or allow file, a baseline, an FRR config, an NVUE file) is a
`Format`: what it is called in messages and its limits. Reading one:

- a file named by the user is opened as given; a file inside a directory the user gave
  (`--configs DIR`, a clone's directory, a containerlab file's binds) is opened below
  that directory only: a symbolic link that leads out of it is refused (twin.base.safeopen);
- at most `max_bytes` are read, and the file is refused above that, before any parsing;
  a directory, a FIFO or a device inside a directory is refused (reading one may never end);
- it must be UTF-8 text: a UTF-16 or Latin-1 file, a NUL byte or a control character
  is refused with the line (and column) where it is.

The parsers built on this (`yaml_safe`, `json_safe`, `csv_safe`, and the DOT reader of
twin.interop.air_dot) bound nesting and the number of values, so whatever the bytes, a
reader returns data or raises TopologyError naming the file and the place.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from twin.base import safeopen
from twin.base.errors import Problem, TopologyError
from twin.topology.problems import Path_, dotted

MiB = 1 << 20


@dataclass(frozen=True)
class Format:
    """A kind of file a user gives twin, and its limits."""

    what: str  # "topology file": "the limit for a topology file"
    noun: str  # "a topology": "a topology is UTF-8 text"
    max_bytes: int = MiB
    max_depth: int = 64  # lists and mappings (objects, arrays) inside each other
    max_values: int = 100_000  # keys, items and values (DOT: tokens, CSV: rows)
    depth_hint: str = ""  # "a topology needs about 6"
    values_hint: str = "far more than any file of its kind holds"

    @property
    def limit(self) -> str:
        return f"{self.max_bytes // MiB} MiB" if self.max_bytes >= MiB else f"{self.max_bytes // 1024} KiB"


TOPOLOGY = Format(
    "topology file",
    "a topology",
    depth_hint="a topology needs about 6",
    values_hint="far more than a fabric that runs on one host",
)
CONTAINERLAB = Format(
    "containerlab file",
    "a containerlab topology",
    depth_hint="a containerlab file needs about 6",
    values_hint="far more than a lab that runs on one host",
)
NVUE = Format(
    "NVUE file",
    "an NVUE startup file",
    MiB,
    64,
    100_000,
    "an NVUE startup file needs about 12",
    "far more than the configuration of one switch",
)
CHECKS = Format("checks file", "a checks file", depth_hint="a checks file needs about 5")
ALLOW = Format("allow file", "an allow file", depth_hint="an allow file needs 3")
AIR_JSON = Format("NVIDIA Air JSON file", "an Air topology", 4 * MiB, 64, 200_000, "an Air topology needs 5")
AIR_DOT = Format("NVIDIA Air DOT file", "an Air topology", 4 * MiB, 64, 500_000)
LLDP_JSON = Format(
    "LLDP file (`lldpctl -f json`)",
    "the output of `lldpctl -f json`",
    4 * MiB,
    64,
    200_000,
    "lldpctl's output needs about 8",
)
CABLES_CSV = Format("cable CSV", "a cable CSV", 4 * MiB, 1, 100_000, values_hint="far more cables than one host runs")
BASELINE = Format("baseline", "a twin baseline", 64 * MiB, 16, 10_000_000, "a baseline needs 8")
FRR_CONFIG = Format("FRR config file", "an FRR config")
DAEMONS = Format("FRR daemons file", "an FRR daemons file")
ENV_FILE = Format("env file", "an env file (containerlab's env-files)", 64 * 1024)
BOUND_FILE = Format("bound file", "a file a lab binds into a node, carried into an export")
FORMATS = (
    TOPOLOGY,
    CONTAINERLAB,
    NVUE,
    CHECKS,
    ALLOW,
    AIR_JSON,
    AIR_DOT,
    LLDP_JSON,
    CABLES_CSV,
    BASELINE,
    FRR_CONFIG,
    DAEMONS,
    ENV_FILE,
    BOUND_FILE,
)
MAX_ENTRIES = 10_000  # entries of a directory a user gives (a config directory, a clone's)

# What YAML calls printable, without the line separators editors do not count as lines (NEL, U+2028/9).
_NOT_TEXT = re.compile("[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_BOMS = [
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
]
SAVE_AS = "save it as UTF-8"


class Refused(Exception):
    """The file cannot be read any further: one problem, at a place."""

    def __init__(self, message: str, line: int | None = None, path: Path_ = (), column: int | None = None):
        super().__init__(message)
        self.message, self.line, self.path, self.column = message, line, path, column

    def problem(self, file: str) -> Problem:
        return Problem(file, dotted(self.path), self.message, self.line, self.column)


def shown(path: str | Path, under: str | Path | None) -> str:
    """The file as messages name it: DIR/rel for a file below a directory."""
    return str(Path(under) / path) if under is not None else str(path)


def read(path: str | Path, fmt: Format, under: str | Path | None = None) -> str:
    """The file's text, or TopologyError naming the file and the place. `under`: the directory
    the user gave, which `path` (relative to it) must not leave, through a link or otherwise."""
    try:
        return read_text(path, fmt, under)
    except Refused as e:
        raise TopologyError([e.problem(shown(path, under))]) from None


def read_text(path: str | Path, fmt: Format, under: str | Path | None = None) -> str:
    """`read`, raising Refused (for parsers that place their own problems)."""
    return decode(read_bytes(path, fmt, under), fmt)


def read_bytes(path: str | Path, fmt: Format, under: str | Path | None = None) -> bytes:
    """At most fmt.max_bytes of the file, or Refused."""
    try:
        if under is not None:
            data = safeopen.read_under(under, str(path), safeopen.BENEATH, fmt.max_bytes)
        else:
            data = _read_named(path, fmt.max_bytes)
    except safeopen.LinkRefused as e:
        raise Refused(
            f"{e.why}: not followed; twin reads nothing outside the directory it was given ({under})"
        ) from None
    except OSError as e:
        raise Refused(f"cannot read the {fmt.what}: {_why(e)}") from None
    except ValueError:  # a NUL byte in the path
        raise Refused(f"cannot read the {fmt.what}: its name holds a NUL byte") from None
    if len(data) > fmt.max_bytes:
        raise Refused(
            f"the file is larger than {fmt.limit} ({fmt.max_bytes} bytes), the limit for "
            f"{a(fmt.what)}; it was not parsed"
        )
    return data


def _read_named(path: str | Path, limit: int) -> bytes:
    """A file the user named: a regular file, or a pipe or device they chose (`<(...)`); never a hang
    on a FIFO that has no writer (opened without waiting for one: it reads as empty)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "it is a directory", str(path))
        if not stat.S_ISREG(mode):
            os.set_blocking(fd, True)
        return safeopen.read_fd(fd, limit)
    finally:
        os.close(fd)


def _why(e: OSError) -> str:
    return "it is a directory" if e.errno == errno.EISDIR else e.strerror or str(e)


def a(what: str) -> str:
    return ("an " if what[0] in "aeiouAEIO" else "a ") + what


def decode(data: bytes, fmt: Format) -> str:
    """UTF-8 text without NUL bytes or control characters (a leading BOM dropped), or Refused."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            raise Refused(f"the file is {encoding} text (it starts with a {encoding} byte order mark); {SAVE_AS}", 1)
    nul = data.find(b"\0")
    if nul >= 0:
        line, column = _place(data, nul)
        raise Refused(
            f"byte {nul} is a NUL byte: {fmt.noun} is UTF-8 text (a file saved as UTF-16 looks like this); {SAVE_AS}",
            line,
            column=column,
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line, column = _place(data, e.start)
        raise Refused(
            f"the file is not UTF-8 text: byte {e.start} (0x{data[e.start]:02x}) cannot be decoded "
            f"(a Latin-1 or Windows-1252 file looks like this); {SAVE_AS}",
            line,
            column=column,
        ) from None
    text = text.removeprefix("\ufeff")
    bad = _NOT_TEXT.search(text)
    if bad:
        pos = bad.start()
        column = pos - text.rfind("\n", 0, pos)
        raise Refused(
            f"column {column} holds the control character U+{ord(bad.group()):04X}: {fmt.noun} is plain "
            "text (tabs and newlines are the only control characters allowed)",
            text.count("\n", 0, pos) + 1,
        )
    return text


def _place(data: bytes, pos: int) -> tuple[int, int]:
    """(line, column) of byte `pos`, the column counted in bytes."""
    return data.count(b"\n", 0, pos) + 1, pos - data.rfind(b"\n", 0, pos)


def entries(d: str | Path | int) -> list[tuple[str, bool]]:
    """(name, is a directory) of what directory `d` holds, sorted, or TopologyError: at most
    MAX_ENTRIES. A link counts as what it points to; reading through it is `read`'s business."""
    try:
        with os.scandir(d) as it:
            found: list[tuple[str, bool]] = []
            for e in it:
                if len(found) >= MAX_ENTRIES:
                    raise TopologyError(
                        [
                            Problem(
                                str(d),
                                "",
                                f"holds more than {MAX_ENTRIES} entries: not a "
                                "directory of a lab's files; nothing was read",
                            )
                        ]
                    )
                found.append((e.name, _is_dir(e)))
    except OSError as e:
        raise TopologyError([Problem(str(d), "", f"cannot read the directory: {_why(e)}")]) from None
    return sorted(found)


@dataclass(frozen=True)
class Found:
    """What a directory holds below it: `rel` (its path in the directory) and what it is."""

    rel: str
    mode: int  # st_mode, of what a link inside leads to

    @property
    def regular(self) -> bool:
        return stat.S_ISREG(self.mode)

    @property
    def what(self) -> str:
        return (
            "a socket"
            if stat.S_ISSOCK(self.mode)
            else "a FIFO"
            if stat.S_ISFIFO(self.mode)
            else "a device"
            if stat.S_ISCHR(self.mode) or stat.S_ISBLK(self.mode)
            else "a file"
        )


def walk(d: str | Path, limit: int) -> list[Found]:
    """Everything that is not a directory below directory `d`, sorted, read by the directory rule: a
    link inside is what it leads to, a link that leads out of `d` is Refused (named); a directory met
    twice (a link to one above it) is walked once. Refused beyond `limit` entries."""
    out: list[Found] = []
    root = _stat_under(d, ".")
    seen = {(root.st_dev, root.st_ino)}
    todo = [""]
    while todo:
        rel = todo.pop()
        for name, _ in entries_under(d, rel):
            child = f"{rel}/{name}" if rel else name
            st = _stat_under(d, child)
            if stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    todo.append(child)
                continue
            out.append(Found(child, st.st_mode))
            if len(out) > limit:
                raise Refused(f"holds more than {limit} files")
    return sorted(out, key=lambda f: f.rel)


def entries_under(d: str | Path, rel: str) -> list[tuple[str, bool]]:
    """`entries` of directory `rel` below `d`, reached by the directory rule (Refused for a link out)."""
    try:
        fd = safeopen.open_under(d, rel or ".", safeopen.BENEATH, os.O_RDONLY | os.O_DIRECTORY)
    except safeopen.LinkRefused as e:
        raise Refused(f"{e.why}: not followed; twin reads nothing outside the directory it was given ({d})") from None
    except OSError as e:
        raise Refused(f"{rel}: cannot read the directory: {_why(e)}") from None
    try:
        found = entries(fd)
    except TopologyError as e:
        raise Refused(f"{rel or '.'}: {e.problems[0].message}") from None
    finally:
        os.close(fd)
    return found


def _stat_under(d: str | Path, rel: str) -> os.stat_result:
    try:
        fd = safeopen.open_under(d, rel, safeopen.BENEATH, os.O_PATH)
    except safeopen.LinkRefused as e:
        raise Refused(f"{e.why}: not followed; twin reads nothing outside the directory it was given ({d})") from None
    except OSError as e:
        raise Refused(f"{rel}: {_why(e)}") from None
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def exists(path: str, under: str | Path) -> bool:
    """Is there something at `path` below `under` (a link to outside counts: reading it says why not)?"""
    try:
        os.close(safeopen.open_under(under, path, safeopen.BENEATH, os.O_PATH))
        return True
    except safeopen.LinkRefused:
        return True
    except OSError:
        return False
