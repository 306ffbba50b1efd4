"""What a request brings, put where twin's one reader reads it (`twin.topology.files` and the
readers built on it: every format's size, depth, encoding and value limits apply as on the
command line).

A topology (twin YAML, a containerlab file, an NVIDIA Air JSON) is written as a file of the
right name into a directory of the server's own; configs come as an archive (tar, tar.gz or zip)
or as a map `{node: {file: text}}`, and become a config directory `twin up --configs` takes.
The request body as a whole is bounded by the service's guard; here:

- an archive member is a regular file or a directory, nothing else (no symbolic or hard
  link, device or FIFO), its name relative and inside the archive (no `..`, no absolute path),
  at most `MAX_MEMBERS` of them, `MAX_TOTAL` bytes once unpacked (counted as it unpacks: a
  small archive that unpacks to gigabytes stops at the limit), `MAX_MEMBER` bytes each;
- a map's node and file names are checked (a lab's node name, a file twin reads) before a path
  is made of them.
Every problem is a `TopologyError` naming the part of the request and what is allowed.
"""

from __future__ import annotations

import io
import os
import posixpath
import tarfile
import zipfile
from pathlib import Path
from typing import IO, Iterator

from twin.base.errors import Problem, TopologyError
from twin.config.userconf import FILES
from twin.topology.names import check_lab_name

MiB = 1 << 20
MAX_MEMBERS = 2000
MAX_MEMBER = 4 * MiB
MAX_TOTAL = 32 * MiB
NAME_MAX = 255  # bytes of one name of a member's path (the file system's limit)
MAX_PATH = 1024  # bytes of a member's path
FORMATS = {"twin": "topology.yml", "containerlab": "topology.clab.yml", "air": "topology.json"}


def refused(part: str, message: str) -> TopologyError:
    return TopologyError([Problem(part, "", message)])


def topology_file(d: Path, text: str | bytes, fmt: str = "twin") -> Path:
    """The topology written into directory `d` under the name its format is read by."""
    if fmt not in FORMATS:
        raise refused("format", f"{fmt!r} is not a topology format; allowed: {', '.join(FORMATS)}")
    f = d / FORMATS[fmt]
    _write(f, text.encode() if isinstance(text, str) else text)
    return f


def config_map(d: Path, configs: object) -> Path:
    """A config map `{node: {file: text}}` as config directory `d/configs`; TopologyError with every problem."""
    if not isinstance(configs, dict) or not configs:
        raise refused("configs", "a config map is {node: {file: text}}, files among " + ", ".join(FILES))
    problems, out = [], d / "configs"
    for node, files in configs.items():
        why = check_lab_name(node) if isinstance(node, str) else "a node name is text"
        if why:
            problems.append(Problem("configs", str(node)[:64], f"not a node name: {why}"))
            continue
        if not isinstance(files, dict) or not files:
            problems.append(Problem("configs", node, "give {file: text}, files among " + ", ".join(FILES)))
            continue
        for name, text in files.items():
            if name not in FILES or not isinstance(text, str):
                problems.append(
                    Problem("configs", f"{node}.{str(name)[:64]}", f"a file among {', '.join(FILES)}, as text")
                )
                continue
            (out / node).mkdir(parents=True, exist_ok=True)
            _write(out / node / name, text.encode())
    if problems:
        raise TopologyError(problems)
    return out


def archive(d: Path, data: bytes, part: str = "configs") -> Path:
    """A tar (gzip, bzip2, xz) or zip archive of a config directory unpacked into `d/<part>`
    (its one top directory dropped when it holds everything); TopologyError saying why not."""
    out = d / part
    out.mkdir(mode=0o700)
    members = _zip(data, part) if data[:4] == b"PK\x03\x04" else _tar(data, part)
    total = 0
    names = []
    for i, (name, is_dir, stream) in enumerate(members):
        if i >= MAX_MEMBERS:
            raise refused(
                part, f"the archive holds more than {MAX_MEMBERS} members; a config directory needs a few per node"
            )
        rel = _member_name(name, part)
        names.append(rel)
        try:
            if is_dir:
                (out / rel).mkdir(parents=True, exist_ok=True)
                continue
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise refused(
                part,
                f"archive member {name[:200]!r}: a file of the archive is on its path (a member "
                "is a file and a directory); each path is one or the other",
            ) from None
        except OSError as e:
            raise refused(part, f"archive member {name[:200]!r}: {e.strerror or 'cannot be made'}") from None
        total += _copy(stream, out / rel, name, part, MAX_TOTAL - total)
    _drop_top(out, names)
    return out


def _member_name(name: str, part: str) -> str:
    norm = posixpath.normpath(name.replace("\\", "/"))
    if name.startswith(("/", "\\")) or norm == ".." or norm.startswith("../") or "\0" in name or norm == ".":
        raise refused(
            part,
            f"archive member {name[:200]!r}: its path leads outside the archive; members are relative paths inside it",
        )
    if len(norm.encode(errors="surrogateescape")) > MAX_PATH or any(
        len(c.encode(errors="surrogateescape")) > NAME_MAX for c in norm.split("/")
    ):
        raise refused(
            part, f"archive member {name[:80]!r}...: a name is at most {NAME_MAX} bytes, a path at most {MAX_PATH}"
        )
    return norm


def _tar(data: bytes, part: str) -> Iterator[tuple[str, bool, IO[bytes] | None]]:
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except (tarfile.TarError, EOFError, OSError) as e:
        raise refused(
            part, f"not a tar or zip archive ({e}); give a .tar, .tar.gz or .zip of a config directory"
        ) from None
    with tar:
        try:
            for m in tar:
                if not (m.isfile() or m.isdir()):
                    what = "a link" if m.issym() or m.islnk() else "not a regular file"
                    raise refused(
                        part,
                        f"archive member {m.name[:200]!r} is {what}; an archive of configs holds "
                        "regular files and directories only",
                    )
                if m.size > MAX_MEMBER:
                    raise refused(part, f"archive member {m.name[:200]!r} is {m.size} bytes; at most {MAX_MEMBER}")
                yield m.name, m.isdir(), None if m.isdir() else tar.extractfile(m)
        except (tarfile.TarError, EOFError, OSError, ValueError) as e:
            raise refused(part, f"a broken archive: {e}") from None


def _zip(data: bytes, part: str) -> Iterator[tuple[str, bool, IO[bytes] | None]]:
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise refused(part, f"not a zip archive ({e})") from None
    with z:
        for info in z.infolist():
            kind = (info.external_attr >> 16) & 0o170000
            if kind not in (0, 0o100000, 0o040000) or (kind == 0o040000) != info.is_dir():
                raise refused(
                    part,
                    f"archive member {info.filename[:200]!r} is a link or not a regular file; an "
                    "archive of configs holds regular files and directories only",
                )
            if info.file_size > MAX_MEMBER:
                raise refused(
                    part, f"archive member {info.filename[:200]!r} is {info.file_size} bytes; at most {MAX_MEMBER}"
                )
            try:
                yield info.filename, info.is_dir(), None if info.is_dir() else z.open(info)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError, ValueError) as e:
                raise refused(part, f"archive member {info.filename[:200]!r}: {e}") from None


def _copy(stream: IO[bytes] | None, dest: Path, name: str, part: str, left: int) -> int:
    if stream is None:
        return 0
    try:
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except (FileExistsError, IsADirectoryError):
        raise refused(
            part, f"archive member {name[:200]!r} is given twice (or as a file and a directory); each path once"
        ) from None
    except OSError as e:
        raise refused(part, f"archive member {name[:200]!r}: {e.strerror or 'cannot be written'}") from None
    n = 0
    try:
        while chunk := stream.read(64 * 1024):
            n += len(chunk)
            if n > min(left, MAX_MEMBER):
                raise refused(
                    part,
                    f"archive member {name[:200]!r}: the archive unpacks to more than "
                    f"{MAX_TOTAL} bytes (or the member to more than {MAX_MEMBER}); nothing was used",
                )
            os.write(fd, chunk)
    except FileExistsError:
        raise refused(part, f"archive member {name[:200]!r} is given twice") from None
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError) as e:
        raise refused(part, f"archive member {name[:200]!r}: {e}") from None
    finally:
        os.close(fd)
    return n


def _drop_top(out: Path, names: list[str]) -> None:
    """An archive made of `tar czf c.tgz configs/` holds configs/<node>/...: its contents are the
    directory. One top directory that holds a node's files itself (frr.conf...) is a node's."""
    tops = {n.split("/")[0] for n in names}
    if len(tops) != 1:
        return
    top = out / tops.pop()
    if top.is_dir() and not any((top / f).is_file() for f in FILES):
        tmp = out.with_name(out.name + ".top")
        top.rename(tmp)
        out.rmdir()
        tmp.rename(out)


def _write(f: Path, data: bytes) -> None:
    fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
