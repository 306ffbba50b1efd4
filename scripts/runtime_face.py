"""Rewrite imports of twin.runtime's rooms into imports of its face (issue 43), mechanically:

    from twin.runtime.kernel import apply        ->  from twin.runtime import apply_steps   (and its uses)
    from twin.runtime import frr; frr.take(ex)   ->  from twin.runtime import frr_take; frr_take(ex)

The face's names are read from twin/runtime/__init__.py (`from twin.runtime.X import a as b`).
Files outside twin/runtime/ under the given directories (default: twin bench scripts) are rewritten
in place; a file where a new name would meet one it already has is left alone and named.
Run `ruff check --fix --select I001,F401` on the result. Usage: python scripts/runtime_face.py [DIR...]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FACE = ROOT / "twin" / "runtime" / "__init__.py"


def face() -> dict[tuple[str, str], str]:
    """(room, its name) -> the face's name."""
    out = {}
    for node in ast.parse(FACE.read_text()).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("twin.runtime."):
            room = node.module.split(".")[2]
            out.update({(room, a.name): a.asname or a.name for a in node.names})
    return out


def identifiers(tree: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.arg):
            out.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names}
    return out


def rewrite(path: Path, names: dict[tuple[str, str], str]) -> str | None:
    """The file's new text ("" when nothing changes); None (and a line on stderr) when it must be done by hand."""
    text = path.read_text()
    tree = ast.parse(text)
    rooms = {r for r, _ in names}
    imports = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom)
        and not n.level
        and (
            (n.module or "").startswith("twin.runtime.")
            or n.module == "twin.runtime"
            and any(a.name in rooms for a in n.names)
        )
    ]  # the face: kept
    if not imports:
        return ""
    renamed: dict[str, str] = {}  # a local name -> the face's
    modules: dict[str, str] = {}  # a local name of a room -> the room
    for node in imports:
        if node.module != "twin.runtime":
            room = node.module.split(".")[2]
            for a in node.names:
                if (room, a.name) not in names:
                    print(f"{path}: {node.module}.{a.name} is not on the face", file=sys.stderr)
                    return None
                if (a.asname or a.name) != names[room, a.name]:
                    renamed[a.asname or a.name] = names[room, a.name]
        else:
            modules.update({a.asname or a.name: a.name for a in node.names if a.name in rooms})
    edits: list[tuple[int, int, int, int, str]] = []  # (line, col, end line, end col, new text)
    used: dict[str, set[str]] = {m: set() for m in modules}
    bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            room = modules[node.value.id]
            if (room, node.attr) not in names:
                print(f"{path}:{node.lineno}: {room}.{node.attr} is not on the face", file=sys.stderr)
                return None
            edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, names[room, node.attr]))
            used[node.value.id].add(names[room, node.attr])
        elif (
            isinstance(node, ast.Name)
            and node.id in modules
            and id(node) not in bases
            and isinstance(node.ctx, ast.Load)
        ):
            print(f"{path}:{node.lineno}: room {node.id} of twin.runtime used whole; by hand", file=sys.stderr)
            return None
        elif isinstance(node, ast.Name) and node.id in renamed:
            edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, renamed[node.id]))
    new_names = set().union(*used.values()) | set(renamed.values())
    clash = new_names & (identifiers(tree) - set(renamed) - set(modules))
    if clash:
        print(f"{path}: {', '.join(sorted(clash))} already named there; by hand", file=sys.stderr)
        return None
    for node in imports:
        if node.module != "twin.runtime":
            room = node.module.split(".")[2]
            got = [names[room, a.name] for a in node.names]
        else:
            got = [a.name if not a.asname else f"{a.name} as {a.asname}" for a in node.names if a.name not in rooms]
            got += sorted(set().union(*(used[a.asname or a.name] for a in node.names if a.name in rooms)))
        edits.append(
            (
                node.lineno,
                node.col_offset,
                node.end_lineno,
                node.end_col_offset,
                "from twin.runtime import " + ", ".join(got) if got else "",
            )
        )
    lines = text.splitlines(keepends=True)
    offset = [0]
    for x in lines:
        offset.append(offset[-1] + len(x))
    out = text
    for ln, col, eln, ecol, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        start, end = offset[ln - 1] + col, offset[eln - 1] + ecol
        if not new and out[offset[ln - 1] : start].strip() == "" and out[end : offset[eln]].strip() == "":
            start, end = offset[ln - 1], offset[eln]  # the import's lines go whole
        out = out[:start] + new + out[end:]
    return out


def main(dirs: list[str]) -> int:
    names = face()
    failed = 0
    for d in dirs:
        for p in sorted((ROOT / d).rglob("*.py")):
            if p.is_relative_to(ROOT / "twin" / "runtime"):
                continue
            new = rewrite(p, names)
            if new is None:
                failed += 1
            elif new and new != p.read_text():
                p.write_text(new)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["twin", "bench", "scripts"]))
