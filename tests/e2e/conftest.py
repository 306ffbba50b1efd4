"""End-to-end fixtures: real Docker engine, real FRR, real veths.

Every lab a test makes is named `t-...` (never a user's lab name) and is torn
down by the fixture even when the test fails.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from pyroute2 import IPRoute, netns

from tests.parallel import SHARED_LABS
from twin.config.naming import LABEL_LAB
from twin.lab import Lab
from twin.lifecycle import barrier
from twin.runtime import etchosts
from twin.runtime.docker import DockerRuntime

# A suite started in the background (`make test &`, `nohup`) inherits SIGINT ignored, and so would
# every twin it spawns: the tests that press Ctrl-C need twin to hear it, as it does in a terminal
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


E2E_LOCK = Path("/tmp/twin-e2e.lock")


@contextmanager
def host_turn(who: str = "twin e2e") -> Iterator[None]:
    """Hold the host's turn (E2E_LOCK) while the block runs: e2e suites, benchmarks and the chaos
    run (which restarts dockerd) take turns; the kernel frees the lock when its holder dies."""
    with open(E2E_LOCK, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if held_by_ancestor(os.fstat(f.fileno()).st_ino):  # `flock E2E_LOCK pytest ...`: the turn is ours
                yield
                return
            print(f"\n{who}: another run holds {E2E_LOCK}; waiting for it", file=sys.stderr)
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def held_by_ancestor(inode: int) -> bool:
    """Is the flock on file `inode` granted to this process's parent or one of its ancestors (`flock(1)`
    running this suite, whose lock a new open of the file here would wait for forever)?"""
    holders = set()
    for line in Path("/proc/locks").read_text().splitlines():
        f = line.split()
        if len(f) > 5 and f[1] == "FLOCK" and f[4].isdigit() and f[5].rsplit(":", 1)[-1] == str(inode):
            holders.add(int(f[4]))
    pid = os.getppid()
    while pid > 1:
        if pid in holders:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


@pytest.fixture(scope="session", autouse=True)
def one_e2e_run_at_a_time(request, twin_home):
    """Test labs have fixed names and Docker's names are host-wide: two e2e runs on one host (two
    checkouts) would tear each other's labs down. They take turns; the run whose turn it is first
    takes down what an earlier run left (`sweep_earlier_runs`). A worker of a parallel run
    (`pytest -n`) does neither: its controller took the turn for all its workers and swept before
    any of them started a test (tests/conftest.py), so no worker takes down a sibling's lab."""
    if hasattr(request.config, "workerinput"):
        yield
        return
    with host_turn():
        sweep_earlier_runs()
        yield


def sweep_earlier_runs() -> list[str]:
    """Take down every test lab (`t-...`: the tests' own names, never a user's) an earlier run left:
    one killed before its teardown, or a machine stopped mid-suite and started again with its
    containers. With the host's turn held no other run has a lab, and a lab of this run's names that
    is already there would be refused ("has containers but no recorded state"). Returns their names."""
    runtime = DockerRuntime()
    names = set(runtime.labs())
    names |= {
        (n.attrs.get("Labels") or {}).get(LABEL_LAB, "")
        for n in runtime.client.networks.list(filters={"label": LABEL_LAB})
    }
    left = sorted(n for n in names if n.startswith("t-"))
    for name in left:
        print(f"\ntwin e2e: taking down lab {name}, left by an earlier run", file=sys.stderr)
        Lab(name).down()
    return left


@pytest.fixture(scope="session")
def twin_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("twin-home")
    old = os.environ.get("TWIN_HOME")
    os.environ["TWIN_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("TWIN_HOME", None)
    else:
        os.environ["TWIN_HOME"] = old


@pytest.fixture(scope="session")
def runtime(twin_home) -> DockerRuntime:
    return DockerRuntime()


@pytest.fixture(scope="session")
def node_image(runtime) -> str:
    return runtime.node_image()


@pytest.fixture(scope="session")
def make_lab(runtime, node_image):
    """make_lab(topology, name) -> a Lab that is up; every lab made is downed at the end."""
    made: list[Lab] = []

    def make(topology: str | Path, name: str, up: bool = True, **kw) -> Lab:
        lab = Lab.load(ROOT / topology, name=name)
        made.append(lab)
        if up:
            lab.up(image=node_image, **kw)
        return lab

    yield make
    for lab in made:
        Lab(lab.name).down()


@pytest.fixture(scope="session")
def shared_aipod(make_lab) -> Lab:
    """The default lab (topologies/aipod.yml as `t-shared`), made once in a run (by the one worker
    that runs the modules sharing it) and taken down at its end. Use it through `aipod`."""
    return make_lab("topologies/aipod.yml", "t-shared")


@pytest.fixture(scope="module")
def aipod(request, shared_aipod) -> Iterator[Lab]:
    """The default lab, shared by the modules that use this fixture: a module that only reads the
    lab, or puts back what it changes (a fault reverted, a proof's elements restored), takes it
    instead of making an aipod of its own (~10 s of bring-up and teardown each). Such a module is
    listed in tests/parallel.py `SHARED_LABS`: a parallel run hands those modules out together, to
    one worker, one after another. After the module's last test the lab must hold its whole intent
    again (within the convergence deadline): a module that leaves it otherwise fails there."""
    module = request.node.nodeid.split("::")[0]
    if module not in SHARED_LABS["aipod"]:
        pytest.fail(
            f"{module} uses the shared lab `aipod`: list it in tests/parallel.py SHARED_LABS['aipod'] "
            "(a parallel run must give it to the worker that has that lab)",
            pytrace=False,
        )
    yield shared_aipod
    barrier.converge(shared_aipod.context())


def twin_cli(*args: str, check: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the `twin` command line as a user would (same TWIN_HOME)."""
    p = subprocess.run(
        [sys.executable, "-m", "twin.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
        cwd=ROOT,
    )
    if check:
        assert p.returncode == 0, f"twin {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
    return p


@contextmanager
def nvue_export_lab(
    runtime: DockerRuntime,
    node_image: str,
    d: Path,
    topology: Path,
    name: str,
    edit: Callable[[Path], None] | None = None,
) -> Iterator[Lab]:
    """Lab `name` of `topology` whose nodes all run its own NVUE export (written into `d`, then given to
    `edit`), as an operator's automation would leave them; taken down after, and nothing of it left."""
    ex = twin_cli("export", str(topology), "--format", "nvue", "-o", str(d))
    assert ex.returncode == 0, ex.stderr
    if edit is not None:
        edit(d)
    p = twin_cli("up", str(topology), "--name", name, "--configs", str(d), "--image", node_image)
    try:
        assert p.returncode == 0, p.stdout + p.stderr
        yield Lab.open(name)
    finally:
        twin_cli("down", name)
    assert leftovers(runtime, name) == []


def nv_in(lab: str, node: str, *words: str) -> subprocess.CompletedProcess:
    """`nv WORDS` in a node, as an operator types it there; it must succeed."""
    p = twin_cli("exec", lab, node, "--", "nv", *words)
    assert p.returncode == 0, f"nv {' '.join(words)} on {node}: {p.stdout}{p.stderr}"
    return p


def nv_apply(lab: str, node: str, *changes: tuple[str, ...]) -> None:
    """The `nv` edits and `nv config apply -y` in one exec of the node (each `twin exec` costs a second)."""
    script = " && ".join(shlex.join(["nv", *c]) for c in [*changes, ("config", "apply", "-y")])
    p = twin_cli("exec", lab, node, "--", "sh", "-c", script)
    assert p.returncode == 0, f"{script} on {node}: {p.stdout}{p.stderr}"


PROGRESS = re.compile(r"^\[\s*\d+s\] ")  # a long command's plain progress line, off a terminal (twin.base.stages)


def said(stderr: str) -> list[str]:
    """The lines of a command's stderr that are not its progress lines: its error (one line), its notes."""
    return [line for line in stderr.strip().splitlines() if not PROGRESS.match(line)]


def leftovers(runtime: DockerRuntime, lab: str) -> list[str]:
    """Anything of `lab` still on the host: containers, networks, host-side veths, namespaces, its
    block of /etc/hosts."""
    found = [
        f"container {c.name}" for c in runtime.client.containers.list(all=True, filters={"label": f"{LABEL_LAB}={lab}"})
    ]
    found += [f"network {n.name}" for n in runtime.client.networks.list(filters={"label": f"{LABEL_LAB}={lab}"})]
    found += [f"/etc/hosts: {name}" for name in etchosts.read(lab)]
    with IPRoute() as ipr:
        for link in ipr.get_links():
            alias = link.get("ifalias") or ""
            name = link.get("ifname") or ""
            if alias.startswith(f"twin:{lab}:") or name.startswith(f"twin-{lab}"):
                found.append(f"host link {name}")
    found += [f"netns {n}" for n in netns.listnetns() if lab in n]
    found += [f"process {pid} (its NVUE service)" for pid in nvue_services(lab)]
    if (Path(os.environ["TWIN_HOME"]) / "labs" / lab).exists():
        found.append(f"lab directory of {lab}")
    return found


def nvue_services(lab: str) -> list[int]:
    """Processes that serve lab `lab`'s NVUE API (`python -m twin.nvue.nvued LAB`), from /proc."""
    out = []
    for d in Path("/proc").glob("[0-9]*"):
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")[:-1]
        except OSError:
            continue
        if argv[-3:] == [b"-m", b"twin.nvue.nvued", lab.encode()]:
            out.append(int(d.name))
    return out


@contextmanager
def chromium(width: int = 1200, height: int = 800) -> Iterator[Any]:
    """Debian's headless Chromium through its chromedriver (Selenium; no browser download), quit after."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        opts.add_argument(a)
    browser = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        yield browser
    finally:
        browser.quit()
