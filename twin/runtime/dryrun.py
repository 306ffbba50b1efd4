"""FRR's own verdict on a user's configs, before anything of the lab exists.

Every frr.conf is read by `vtysh --dryrun -f` (FRR's parser with every daemon's
commands, no daemon running) in ONE throwaway container of the node image, and
every daemon a daemons file enables is looked for in the image. Why a throwaway
container and not the nodes themselves: the check must run before anything is
created (a refused config leaves no container, link or namespace behind), it
must judge the very FRR the nodes will run (the node image's), and one container
checks every node's file (~1 s for a whole lab). It is named and labelled after
the lab (`twin down` removes it if twin is killed meanwhile) and removed at once.

FRR's answer is kept as FRR prints it, with the file and line it is about:

    cfg/leaf1/frr.conf:5: % Unknown command[28]:  neighbor swp1 interfacee peer-group fabric
"""

from __future__ import annotations

import io
import re
import tarfile

import docker

from twin.base import timeouts, wait
from twin.base.errors import ConfigError, Problem, TwinError
from twin.config.naming import LABEL_LAB, dryrun_container
from twin.config.userconf import DAEMONS, FRR_CONF, UserConfigs

CHECK_DIR = "/twin-check"
FRR_LIB = "/usr/lib/frr"
_LINE = re.compile(r"^line (\d+): (.*)$")
_MARK = "=== twin:"
_DAEMON = re.compile(r"^(\w+d)=yes\b")
_DAEMON_NAME = re.compile(r"\w+d|zebra")
_SCRIPT = f"""\
for d in {CHECK_DIR}/*/; do
  n=$(basename "$d")
  if [ -f "${{d}}{FRR_CONF}" ]; then
    echo "{_MARK} $n"
    vtysh --dryrun -f "${{d}}{FRR_CONF}" 2>&1
    echo "{_MARK} $n rc=$?"
  fi
done
echo "{_MARK} daemons"
ls {FRR_LIB}
"""


def check(client: docker.DockerClient, image: str, lab: str, configs: UserConfigs) -> None:
    """ConfigError naming every line FRR refuses (FRR's words, file:line), and every daemon a
    daemons file enables that the image does not have."""
    out = _run(client, image, lab, configs)
    problems = parse(out, configs)
    if problems:
        raise ConfigError(configs.source, problems)


def _archive(configs: UserConfigs) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for node, files in configs.files.items():
            if FRR_CONF in files:
                data = files[FRR_CONF].encode()
                info = tarfile.TarInfo(f"{CHECK_DIR.lstrip('/')}/{node}/{FRR_CONF}")
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _run(client: docker.DockerClient, image: str, lab: str, configs: UserConfigs) -> str:
    name = dryrun_container(lab)
    try:
        old = client.containers.get(name)  # left by a killed twin
        old.remove(force=True)
    except docker.errors.NotFound:
        pass
    try:
        c = client.containers.create(
            image,
            command=["sh", "-c", _SCRIPT],
            name=name,
            labels={LABEL_LAB: lab},
            network_mode="none",
            mem_limit="256m",
            pids_limit=64,
            detach=True,
        )
    except docker.errors.ImageNotFound:
        raise TwinError(f"no image {image!r} here to check the configs with; `twin image build`") from None
    try:
        c.put_archive("/", _archive(configs))
        c.start()
        rc = c.wait(timeout=wait.cut(timeouts.DRY_RUN, f"{lab}: FRR checking your configs")).get("StatusCode", -1)
        text = c.logs().decode(errors="replace")
        if rc:
            raise TwinError(f"checking the configs in {image} failed (exit {rc}): {text.strip()[-400:]}")
        return text
    except docker.errors.APIError as e:
        raise TwinError(f"checking the configs: Docker: {e.explanation or e}") from None
    finally:
        c.remove(force=True)


def parse(out: str, configs: UserConfigs) -> list[Problem]:
    """FRR's complaints per file (pure): `line N: ...` of vtysh --dryrun, anything else of a
    file it refused, and daemons enabled that the image's list (after the marker) lacks."""
    problems: list[Problem] = []
    node = ""
    lines: list[str] = []  # vtysh's output for `node`'s file
    daemons: set[str] | None = None  # the image's daemons, once its list begins
    for raw in out.splitlines():
        if raw.startswith(_MARK):
            word = raw[len(_MARK) :].split()
            if word == ["daemons"]:
                daemons = set()
            elif len(word) == 2 and word[1].startswith("rc="):
                if word[1] != "rc=0":
                    problems += _refused(configs.path(word[0], FRR_CONF), lines, word[1][3:])
                node, lines = "", []
            else:
                node, lines = word[0], []
        elif daemons is not None:
            daemons.add(raw.strip())
        elif node:
            lines.append(raw)
    return problems + _missing_daemons(configs, daemons or set())


def _refused(path: str, lines: list[str], rc: str) -> list[Problem]:
    found = [Problem(path, "", m.group(2).strip(), int(m.group(1))) for m in map(_LINE.match, lines) if m]
    if found:
        return found
    said = " ".join(ln.strip() for ln in lines if ln.strip() and not ln.startswith("Configuration file["))
    return [Problem(path, "", f"vtysh --dryrun exited {rc}" + (f": {said[:400]}" if said else ""))]


def _missing_daemons(configs: UserConfigs, have: set[str]) -> list[Problem]:
    out = []
    for node, files in configs.files.items():
        for i, line in enumerate(files.get(DAEMONS, "").splitlines(), 1):
            m = _DAEMON.match(line.strip())
            if m and have and m.group(1) not in have:
                known = ", ".join(sorted(d for d in have if _DAEMON_NAME.fullmatch(d)))
                out.append(
                    Problem(
                        configs.path(node, DAEMONS),
                        "",
                        f"{m.group(1)}=yes: the node image's FRR has no {m.group(1)} (it has {known})",
                        i,
                    )
                )
    return out
