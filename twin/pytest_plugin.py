"""pytest plugin: a twin lab per test module, node handles, FRR JSON assertions.

Registered as the `pytest11` entry point `twin`, so it is active wherever twin
is installed; it does nothing unless a test uses its fixtures.

    import pytest
    from twin.pytest_plugin import assert_frr_json

    pytestmark = pytest.mark.twin_topology("topologies/aipod.yml", name="t-mylab")

    def test_leaf1_peers(twin_node):
        assert_frr_json(twin_node("leaf1"), "show bgp summary json",
                        {"ipv4Unicast": {"peers": {"swp1": {"state": "Established"}}}}, timeout=30)

Fixtures:
  twin_lab   (module) the lab of the module's `twin_topology` marker (or the ini
             option `twin_topology`), brought up before the module's first test
             and removed after its last one;
  twin_node  (function) `twin_node("leaf1")` -> the node's NodeExec;
  twin_remote_lab (module) the same lab made on a twin server instead (`twin serve`:
             the ini option `twin_server` or $TWIN_SERVER, a token in $TWIN_TOKEN): no
             root, no Docker; `.node("leaf1")` takes `assert_frr_json` as a local node does.

The checks `twin verify --checks` runs, one test per check, on the module's lab:

    test_checks = twin_checks("checks.yml")      # a checks file, or a topology with checks:

A relative topology path is looked up next to the test module, then from the
rootdir. A lab that is already up is never taken over (nor removed).
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest

from twin.base import wait
from twin.base.errors import ConvergenceTimeout, TopologyError, TwinError
from twin.client import Client
from twin.lab import Lab
from twin.topology.checks import load_checks
from twin.topology.schema import CheckSpec
from twin.verify import checks as user_checks
from twin.verify.jsoncmp import subset

if TYPE_CHECKING:
    from twin.runtime import NodeExec

MARKER = "twin_topology"
INI = "twin_topology"
SERVER = "twin_server"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI, "twin: topology file for modules without a twin_topology marker (relative to the ini file)", default=""
    )
    parser.addini(
        SERVER,
        "twin: a twin server's URL, where `twin_remote_lab` makes the module's lab "
        "(else $TWIN_SERVER; the token: $TWIN_TOKEN)",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(path, name=None, timeout=None): the twin topology the module's `twin_lab` fixture "
        "brings up (lab name: `name`, else the topology's; convergence deadline: `timeout` s)",
    )


def _topology(request: pytest.FixtureRequest) -> tuple[Path, dict[str, Any]]:
    """The topology file and marker options for the requesting module."""
    marker = request.node.get_closest_marker(MARKER)
    here = Path(str(request.node.path)).parent
    if marker is not None:
        if not marker.args:
            pytest.fail(f"{request.node.nodeid}: @pytest.mark.{MARKER} needs a topology path", pytrace=False)
        unknown = set(marker.kwargs) - {"name", "timeout"}
        if unknown:
            pytest.fail(
                f"{request.node.nodeid}: {MARKER}: unknown option(s) "
                f"{', '.join(sorted(unknown))}; options: name, timeout",
                pytrace=False,
            )
        raw, bases, opts = marker.args[0], [here, request.config.rootpath], dict(marker.kwargs)
    else:
        raw = request.config.getini(INI)
        if not raw:
            pytest.fail(
                f"{request.node.nodeid} uses the twin_lab fixture but names no topology: add "
                f'`pytestmark = pytest.mark.{MARKER}("lab.yml")` or the ini option `{INI}`',
                pytrace=False,
            )
        ini = request.config.inipath
        bases, opts = [ini.parent if ini else request.config.rootpath], {}
    path = Path(raw)
    if not path.is_absolute():
        path = next((b / path for b in bases if (b / path).is_file()), bases[0] / path)
    return path, opts


@pytest.fixture(scope="module")
def twin_lab(request: pytest.FixtureRequest) -> Iterator[Lab]:
    """The module's lab, up and converged; removed after the module (only if this fixture made it)."""
    path, opts = _topology(request)
    try:
        lab = Lab.load(path, name=opts.get("name"))
        lab.up(timeout=opts.get("timeout"))
    except TwinError as e:  # up() removed what it made (and touched nothing if the lab was already up)
        pytest.fail(f"twin: the lab of {path} did not come up: {e}", pytrace=False)
    try:
        yield lab
    finally:
        lab.down()


@pytest.fixture
def twin_node(twin_lab: Lab) -> Callable[[str], "NodeExec"]:
    """`twin_node(name)` -> that node of the module's lab, to run commands and vtysh in."""
    return twin_lab.node


@dataclass
class RemoteNode:
    """A node of a lab on a twin server, as `assert_frr_json` reads one (its exec allow-list: show commands)."""

    client: Client
    lab: str
    node: str

    @property
    def where(self) -> str:
        return f"{self.lab}/{self.node} (on {self.client.url})"

    def vtysh_json(self, command: str) -> list[Any]:
        res = self.client.exec(self.lab, self.node, ["vtysh", "-c", command])
        if res["rc"] != 0:
            raise TwinError(f"{self.where}: vtysh -c {command!r} exited {res['rc']}: {res['stderr'].strip()}")
        try:
            return [json.loads(res["stdout"])]
        except ValueError:
            raise TwinError(f"{self.where}: vtysh -c {command!r} did not answer JSON") from None


@dataclass
class RemoteLab:
    """The module's lab on a twin server: its name, the client, and the operation that made it."""

    client: Client
    name: str
    created: dict

    def node(self, name: str) -> RemoteNode:
        return RemoteNode(self.client, self.name, name)

    def verify(self, **options: Any) -> dict:
        """`twin verify --json`'s result, run by the server."""
        op = self.client.verify(self.name, **options)
        if op["state"] != "succeeded":
            raise TwinError(f"verify of {self.name} on {self.client.url}: {op['error']['detail']}")
        return op["result"]


@pytest.fixture(scope="module")
def twin_remote_lab(request: pytest.FixtureRequest) -> Iterator[RemoteLab]:
    """The module's lab made on a twin server, up and converged; removed after the module."""
    url = request.config.getini(SERVER) or os.environ.get("TWIN_SERVER")
    if not url:
        pytest.fail(
            f"{request.node.nodeid} uses twin_remote_lab but names no server: the ini option `{SERVER}` "
            "or $TWIN_SERVER",
            pytrace=False,
        )
    path, opts = _topology(request)
    try:
        client = Client(url)
        op = client.create(path, name=opts.get("name"), timeout=opts.get("timeout"))
    except TwinError as e:
        pytest.fail(f"twin: the lab of {path} was not made on {url}: {e}", pytrace=False)
    if op["state"] != "succeeded":
        pytest.fail(f"twin: the lab of {path} did not come up on {url}: {op['error']['detail']}", pytrace=False)
    try:
        yield RemoteLab(client, op["result"]["lab"], op)
    finally:
        client.delete(op["result"]["lab"])


def assert_frr_json(node: "NodeExec | RemoteNode", command: str, expected: Any, timeout: float = 0) -> Any:
    """Assert that `vtysh -c COMMAND` (JSON) on `node` contains `expected` (subset match).

    With `timeout` > 0, retries until it matches or the deadline passes. Raises
    AssertionError listing every difference with its JSON path (or the vtysh
    error); returns the matching document.
    """
    __tracebackhide__ = True
    seen: dict[str, Any] = {}

    def differences() -> list[str]:
        try:
            seen["doc"] = node.vtysh_json(command)[0]
        except TwinError as e:
            return [f"vtysh failed: {e}"]
        return subset(expected, seen["doc"])

    where = getattr(node, "where", str(node))
    if timeout > 0:
        try:
            wait.until(differences, timeout, f"{where}: `{command}` matching")
            return seen["doc"]
        except ConvergenceTimeout as e:
            diffs, after = e.missing, f" after {timeout:g}s"
    else:
        diffs, after = differences(), ""
    if diffs:
        raise AssertionError(
            f"{where}: `{command}` does not match the expected JSON{after} "
            f"({len(diffs)} difference{'s' if len(diffs) != 1 else ''}):\n" + "\n".join(f"  {d}" for d in diffs)
        )
    return seen["doc"]


def twin_checks(path: str | Path) -> Callable:
    """A test function with one test per check of `path` (ids: the checks' names), each judged
    on the module's `twin_lab` as `twin verify` judges it; a failure says what was seen.

    A relative path is looked up next to the calling module, then from the working directory.
    The file's structure is checked when the module is collected (every problem at once);
    its nodes, peers and VRFs against the lab once it is up."""
    here = Path(inspect.stack()[1].filename).parent
    file = Path(path)
    if not file.is_absolute():
        file = here / file if (here / file).is_file() else Path.cwd() / file
    checks = load_checks(file).checks
    if not checks:
        raise TwinError(f"{file}: no checks in it, so no test to make")
    validated: dict[str, str] = {}

    @pytest.mark.parametrize("twin_check", checks, ids=[c.name for c in checks])
    def test_check(twin_lab: Lab, twin_check: CheckSpec) -> None:
        __tracebackhide__ = True
        ctx = twin_lab.context()
        if "problems" not in validated:
            try:
                load_checks(file, ctx.fabric)
                validated["problems"] = ""
            except TopologyError as e:
                validated["problems"] = str(e)
        if validated["problems"]:
            pytest.fail(f"{file} does not fit lab {ctx.name}: {validated['problems']}", pytrace=False)
        (result,) = user_checks.run(ctx, [twin_check])
        if not result.passed:
            pytest.fail(f"check {twin_check.name!r} ({twin_check.type}) failed: {result.message}", pytrace=False)

    return test_check
