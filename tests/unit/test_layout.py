"""The layout holds: packages named after the data path, each importing only the ones
before it (so no import circle can form), small modules and functions, and one name
per fault everywhere."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TWIN = ROOT / "twin"
MAX_MODULE_LINES = 400  # as `ruff format` writes them: a prompt to look for where an idea ends
# The modules that stay longer, and why: splitting each would cut one idea in two. None may pass twice the cap.
LONGER_BY_MEANING = {
    "twin.nvue.plane": "one node's NVUE tree made into its Fabric: tenants, ports and hosts resolved together",
    "twin.interop.clab_import": "containerlab's resolution of a node (kind, group, defaults) and its mapping to "
    "twin, one reading of one file",
    "twin.change.apply": "apply's ordered stages, each reading the one before (its docstring lists them)",
    "twin.prove.kernel_side": "the kernel elements, broken and restored through the same node views",
    "twin.topology.schema": "the topology file's types: one model, read top to bottom as a user writes it",
    "twin.lifecycle.hostlimits": "the demand formula and the host's limits it is checked against",
    "twin.nvue.tree": "the pure operations `nv set`, `unset`, `patch` and `replace` are made of, on one tree",
    "twin.lifecycle.service": "one ASGI service on several listeners, started and stopped as one",
    "twin.intent.frrconf": "one reader of frr.conf's grammar",
    "twin.lifecycle.barrier": "the convergence barrier: intent, what the nodes hold, and what is still missing",
    "twin.nvue.nvued.show": "the operational state of NVUE's subset, every path `nv show` answers",
}
# A function's size in statements (the formatter's line breaks do not change it)
MAX_FUNCTION_STATEMENTS = 50
DATA = (TWIN / "images",)  # package data: the node image's recipe (its scripts run in the image, not in twin)

# The data path: each layer may import the layers before it, never one after it. A module sits in the
# layer of the longest name it starts with.
LAYERS = [
    {"twin.base"},  # errors, deadlines and the wait, stages, the users' files' reader, JUnit, version
    {"twin.kinds"},
    {"twin.topology"},
    {"twin.intent"},
    {"twin.lint"},  # the configs' declarations against intent (pure); dialects register their readers with it
    {"twin.config"},
    {"twin.interop"},
    {"twin.runtime"},
    {"twin.lifecycle"},
    {"twin.traffic"},
    {"twin.verify"},
    {"twin.observe"},
    {"twin.prove"},
    {"twin.change"},
    {"twin.nvue"},  # a configuration dialect, in one folder: the rooms below ask its registration, never it
    {"twin.dialects"},  # the dialects twin speaks, registered (`twin.config.dialect`)
    {"twin.lab"},
    {"twin.host"},
    {"twin.server"},  # `twin serve`: the API over Lab and the stages the CLI uses
    {"twin.client"},  # the API's client, for the pytest plugin and `twin --server`
    {"twin.pytest_plugin"},
    {"twin.cli"},
    {"twin", "twin.__main__"},  # the package's face (Lab, verify) and `python -m twin`
]
# A package whose own rooms come in layers of their own: them in order, its face after them all. NVUE's: its
# model and tree (pure), its planes and renderings, its change kinds, its service and what it registers.
INNER = {
    "twin.nvue": [
        {
            "twin.nvue.places",
            "twin.nvue.schema_routing",
            "twin.nvue.schema_ospf",
            "twin.nvue.schema_kernel",
            "twin.nvue.schema",
            "twin.nvue.tree",
            "twin.nvue.load",
            "twin.nvue.model",
            "twin.nvue.policy",
            "twin.nvue.ospf",
            "twin.nvue.api",
            "twin.nvue.cli",
            "twin.nvue.client",
        },
        {
            "twin.nvue.plane",
            "twin.nvue.routed",
            "twin.nvue.beyond",
            "twin.nvue.bonds",
            "twin.nvue.vlanaware",
            "twin.nvue.frr",
            "twin.nvue.kernelplane",
            "twin.nvue.configs",
            "twin.nvue.export",
            "twin.nvue.declared",
            "twin.nvue.acl",
            "twin.nvue.aclbind",
            "twin.nvue.mtu",
            "twin.nvue.qos",
            "twin.nvue.lldp",
            "twin.nvue.hostname",
        },
        {"twin.nvue.change", "twin.nvue.judge", "twin.nvue.policycheck", "twin.nvue.routing", "twin.nvue.aclflows"},
        {
            "twin.nvue.service",
            "twin.nvue.nvued",
            "twin.nvue.prove",
            "twin.nvue.kernelprove",
            "twin.nvue.dialect",
            "twin.nvue.kernelcheck",
            "twin.nvue.qoscheck",
            "twin.nvue.lldpcheck",
        },
    ],
}


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted(TWIN.rglob("*.py")):
        if any(p.is_relative_to(d) for d in DATA):
            continue
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _longest(module: str, layers: list[set[str]]) -> int:
    found = [
        (len(n), i)
        for i, names in enumerate(layers)
        for n in names
        if n != "twin" and (module == n or module.startswith(n + "."))
    ]
    return max(found)[1] if found else -1


def layer(module: str) -> tuple[int, int]:
    """(its layer of the house, its layer inside its package when the package has them); -1: none."""
    outer = len(LAYERS) - 1 if module in LAYERS[-1] else _longest(module, LAYERS)
    for pkg, inner in INNER.items():
        if module == pkg:
            return outer, len(inner)
        if module.startswith(pkg + "."):
            return outer, _longest(module, inner)
    return outer, 0


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """twin modules `name` imports, at module level or inside functions alike."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        # `from twin import x` imports module twin.x, not the package's face
        found = {t for t in targets if t in known and t not in (name, "twin") and not name.startswith(t + ".")}
        out |= found | {p for t in found for p in parents(t) if not name.startswith(p + ".")}
    return out


def parents(module: str) -> list[str]:
    """The packages Python runs first when `module` is imported (importing a.b.c runs a/__init__ and
    a/b/__init__), but `twin` itself: its face is lazy (PEP 562) and imports no room at import time."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def test_every_module_sits_in_a_layer():
    assert [m for m in modules() if min(layer(m)) < 0] == []


def test_no_package_imports_one_after_it_on_the_data_path():
    known = modules()
    wrong = []
    for name, path in known.items():
        for target in imports(name, path, known):
            if layer(target) > layer(name):
                wrong.append(f"{name} imports {target}")
    assert wrong == [], "imports against the data path (and circles waiting to happen):\n" + "\n".join(wrong)


HIDDEN = ("docker", "pyroute2", "requests")  # the runtime's libraries (requests: the Docker SDK's transport)


def library_imports(path: Path) -> set[str]:
    """Top-level packages among HIDDEN that a module imports, at module level or inside functions."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        out |= {n.split(".")[0] for n in names if n.split(".")[0] in HIDDEN}
    return out


def test_only_the_runtime_imports_docker_or_pyroute2():
    """The runtime seam hides its libraries (issue 26): above `twin.runtime` their objects and
    exceptions are twin's own (NodeHandle, Netlink, NetlinkFailed, NodeGone, RuntimeFailed)."""
    wrong = [
        f"{name} imports {', '.join(sorted(libs))}"
        for name, path in modules().items()
        if not (name == "twin.runtime" or name.startswith("twin.runtime.")) and (libs := library_imports(path))
    ]
    assert wrong == [], "library imports above the runtime seam:\n" + "\n".join(wrong)


def test_no_import_circle():
    known = modules()
    graph = {m: imports(m, p, known) for m, p in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for m in graph:
        if m not in index:
            visit(m)
    assert circles == [], "import circles (a parent package's __init__ counted, as Python runs it):\n" + "\n".join(
        " <-> ".join(c) for c in circles
    )


def test_modules_and_functions_stay_small():
    big = []
    for name, path in modules().items():
        text = path.read_text()
        cap = 2 * MAX_MODULE_LINES if name in LONGER_BY_MEANING else MAX_MODULE_LINES
        if text.count("\n") > cap:
            big.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                statements = sum(isinstance(s, ast.stmt) for s in ast.walk(node)) - 1
                if statements > MAX_FUNCTION_STATEMENTS:
                    big.append(f"{name}.{node.name}: {statements} statements")
    assert big == []


def test_a_module_said_to_stay_long_is_long():
    """An entry of LONGER_BY_MEANING whose module has come back under the cap is removed, not kept."""
    short = [n for n in LONGER_BY_MEANING if modules()[n].read_text().count("\n") <= MAX_MODULE_LINES]
    assert short == []


def test_every_package_says_what_it_owns():
    missing = [p for p in TWIN.rglob("__init__.py") if not ast.get_docstring(ast.parse(p.read_text()))]
    assert missing == []


def test_kinds_are_not_told_apart_by_name_outside_kinds():
    pattern = re.compile(r"""\.kind\s*[!=]=\s*["'](spine|leaf|dpu|host)["']""")
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in TWIN.rglob("*.py")
        if "kinds" not in p.parts
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def test_one_name_per_fault_in_the_registry_the_cli_rehearse_and_the_readme():
    from click.testing import CliRunner

    from twin.base.errors import TwinError
    from twin.change import REGISTRY, fault_types, parse_fault
    from twin.cli import main
    from twin.cli.faults import fault_group

    keys = set(fault_types())
    assert keys == {
        "link-down",
        "link-up",
        "link-loss",
        "link-loss-clear",
        "node-stop",
        "node-kill",
        "node-start",
        "node-restart",
        "daemon-kill",
    }
    assert set(fault_group.commands) == keys, "`twin fault` has exactly the registered faults"
    with pytest.raises(TwinError) as e:
        parse_fault(None, "fault:no-such:x")
    assert re.search(r"faults: ([a-z, -]+) \(", str(e.value)).group(1).split(", ") == list(fault_types())
    assert set(REGISTRY) == keys | {"topology", "configs", "nvue"}
    page = (ROOT / "docs" / "faults.md").read_text()
    assert all(f"`{k}`" in page for k in keys), "the faults page names every fault as the registry does"
    for k in keys:  # every command's help shows its usage under the same name
        res = CliRunner().invoke(main, ["fault", k, "--help"], prog_name="twin")
        assert res.exit_code == 0 and f"twin fault {k}" in res.output


def test_validating_a_topology_loads_neither_docker_nor_pyroute2():
    code = (
        "import sys, twin.topology; heavy = [m for m in ('docker', 'pyroute2') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr


# Packages whose face is not drawn yet (none: twin.runtime's was the last, issue 43).
FACELESS: set[str] = set()


def faces() -> dict[str, set[str]]:
    """Each package (a directory with an __init__) -> the names its __init__ offers in `__all__`."""
    out = {}
    for name, path in modules().items():
        if path.name == "__init__.py" and name != "twin":
            tree = ast.parse(path.read_text())
            offered = [
                ast.literal_eval(n.value)
                for n in tree.body
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
            ]
            out[name] = set(offered[0]) if offered else set()
    return out


def test_every_package_shows_its_face():
    """Each package says in `__all__` what it offers, and offers only what it has: a name its __init__
    binds, or one of its modules."""
    known, wrong = modules(), []
    for pkg, offered in faces().items():
        if pkg in FACELESS:
            continue
        if not offered:
            wrong.append(f"{pkg}: no __all__")
        tree = ast.parse(known[pkg].read_text())
        bound = {
            a.asname or a.name.split(".")[0]
            for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names
        }
        bound |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        bound |= {
            t.id
            for n in tree.body
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            if isinstance(t, ast.Name)
        }
        wrong += [f"{pkg}: offers {x} it does not have" for x in sorted(offered - bound) if f"{pkg}.{x}" not in known]
    assert wrong == []


def test_outside_a_package_only_its_face_is_imported():
    """`from twin.x.y import a` or `from twin.x import a` by a module outside package twin.x names only
    what twin.x offers in `__all__`, or a module y it offers whole (the innermost package:
    twin.nvue has its own face)."""
    known, offered, wrong = modules(), faces(), []
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith("twin."):
                continue
            pkg = node.module if node.module in offered else node.module.rsplit(".", 1)[0]
            if pkg not in offered or pkg in FACELESS or name == pkg or name.startswith(pkg + "."):
                continue
            if node.module.rsplit(".", 1)[-1] in offered[pkg] and node.module != pkg:
                continue  # a module the package offers whole (imported on demand: the web service, say)
            wrong += [f"{name}: {node.module}.{a.name}" for a in node.names if a.name not in offered[pkg]]
    assert wrong == [], (
        "imported from behind a package's face (add it to __all__, or import what it offers):\n" + "\n".join(wrong)
    )


def test_the_cli_goes_through_lab_and_the_faces():
    """`twin.cli` reaches nothing of `runtime/` (it asks `Lab`, `LabContext` and `twin.host`); what it imports
    of the other packages is their face (the test above)."""
    known = modules()
    below = sorted(
        f"{name} imports {t}"
        for name, path in known.items()
        if name.startswith("twin.cli")
        for t in imports(name, path, known)
        if t == "twin.runtime" or t.startswith("twin.runtime.")
    )
    assert below == []


def test_outside_the_runtime_nothing_imports_one_of_its_rooms():
    """`twin.runtime` has a face (issue 43): a module outside it imports names from `twin.runtime`, never
    `twin.runtime.X` (`from twin.runtime.X import a`, `import twin.runtime.X`, `from twin.runtime import X`),
    so its rooms can change without anyone above noticing."""
    known = modules()
    inner = sorted(
        f"{name} imports {t}"
        for name, path in known.items()
        if name != "twin.runtime" and not name.startswith("twin.runtime.")
        for t in imports(name, path, known)
        if t.startswith("twin.runtime.")
    )
    assert inner == [], "imports of the runtime's rooms (import its face's names instead):\n" + "\n".join(inner)
