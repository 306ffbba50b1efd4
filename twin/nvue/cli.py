"""The `nv` command as pure functions: its words parsed (`parse`), its edits made on a tree
(`edit`), and a file of `nv` commands read (`commands`: a day-2 change for `twin plan`,
`apply` and `rehearse`). The service (`twin.nvue.nvued`) runs them against a node's revisions;
the node's `nv` client (`client.py`) only sends its words and prints what comes back.

    cmd = parse(["set", "interface", "swp1-4", "link", "state", "up"])
    tree = edit(tree, cmd)                     # ValueError / TopologyError: nothing changed
    for line, cmd in commands(text, "leaf01.nv"): ...
"""

from __future__ import annotations

import copy
import json
import shlex
from dataclasses import dataclass
from typing import Any

from twin.base.errors import Problem, TopologyError
from twin.nvue.load import documents, from_tree, yaml_text
from twin.nvue.places import Leaf
from twin.nvue.tree import Path, set_path, spec_at, unset_path, words
from twin.topology.problems import quoted
from twin.topology.yaml_safe import read_yaml_bytes

EDITS = ("set", "unset", "patch", "replace", "detach")
VERBS = {
    "set": "nv set PATH VALUE",
    "unset": "nv unset PATH",
    "apply": "nv config apply [-y|--assume-yes] [--wait]",
    "diff": "nv config diff [-o json|yaml]",
    "patch": "nv config patch FILE",
    "replace": "nv config replace FILE",
    "detach": "nv config detach",
    "save": "nv config save",
    "config-show": "nv config show [-o json|yaml]",
    "show": "nv show [PATH] [-o json|yaml]",
}
HELP = (
    "usage: nv COMMAND (twin's NVUE, Cumulus Linux 5.9's nv for the subset twin emulates)\n"
    + "".join(f"  {u}\n" for u in VERBS.values())
    + "Interface ranges name several: nv set interface swp1-4,swp7 link state up.\n"
)
MAX_WORDS = 128


@dataclass(frozen=True)
class Command:
    verb: str  # a key of VERBS, or "help"
    words: tuple[str, ...] = ()  # set/unset/show: the path words (and set's value)
    output: str = ""  # -o json|yaml
    yes: bool = False  # -y / --assume-yes
    wait: bool = False  # apply --wait: until the lab converged too
    file: str = ""  # patch/replace: the file named

    def __str__(self) -> str:
        return "nv " + shlex.join(
            ([self.verb] if self.verb in ("set", "unset", "show") else ["config", self.verb.replace("config-", "")])
            + list(self.words)
            + ([self.file] if self.file else [])
        )


def parse(argv: list[str]) -> Command:
    """`nv`'s words (without `nv`) -> the command; ValueError with the usage when they are not one."""
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ValueError("the words of nv are a list of text")
    # words are printable, but for the value `nv set` ends with: NVUE's type of its place judges it (exit 1)
    words_ = argv[:-1] if argv[:1] == ["set"] and len(argv) > 2 else argv
    if len(argv) > MAX_WORDS or any(len(a) > 4096 for a in argv) or not all(a.isprintable() for a in words_):
        raise ValueError(f"nv takes at most {MAX_WORDS} words of printable text (and a value, `nv set`'s last)")
    if not argv or argv[0] in ("-h", "--help", "help"):
        return Command("help")
    head, rest = argv[0], argv[1:]
    if head in ("set", "unset"):
        if not rest:
            raise ValueError(f"usage: {VERBS[head]}")
        return Command(head, tuple(rest))
    if head == "show":
        words_, output, _, _ = _options(rest, "show")
        return Command("show", tuple(words_), output)
    if head != "config" or not rest:
        raise ValueError(f"unknown command {quoted(' '.join(argv[:2]))}\n{HELP}")
    return _config(rest[0], rest[1:])


def _config(sub: str, rest: list[str]) -> Command:
    verb = "config-show" if sub == "show" else sub
    if verb not in VERBS or verb in ("set", "unset", "show"):
        raise ValueError(f"unknown command {quoted('nv config ' + sub)}\n{HELP}")
    args, output, yes, wait = _options(rest, verb)
    if verb in ("patch", "replace"):
        if len(args) != 1:
            raise ValueError(f"usage: {VERBS[verb]}")
        return Command(verb, (), output, yes, file=args[0])
    if args:
        raise ValueError(f"{quoted(' '.join(args))}: {VERBS[verb]} takes no more words")
    return Command(verb, (), output, yes, wait=wait)


def _options(args: list[str], verb: str) -> tuple[list[str], str, bool, bool]:
    out, output, yes, wait = [], "", False, False
    it = iter(args)
    for a in it:
        if a in ("-o", "--output"):
            output = next(it, "")
            if output not in ("json", "yaml"):
                raise ValueError(f"{a} takes json or yaml (usage: {VERBS[verb]})")
        elif a in ("-y", "--assume-yes") and verb == "apply":
            yes = True
        elif a == "--wait" and verb == "apply":
            wait = True
        elif a.startswith("-") and len(a) > 1 and not a[1].isdigit():
            raise ValueError(f"{quoted(a)}: no such option (usage: {VERBS[verb]})")
        else:
            out.append(a)
    return out, output, yes, wait


# --- edits --------------------------------------------------------------------------------------------
def edit(tree: dict, cmd: Command, data: bytes | None = None) -> dict:
    """The tree after `cmd` (set, unset, patch, replace), checked against NVUE's object tree;
    ValueError or TopologyError (every problem) and `tree` untouched when it cannot be made."""
    new = copy.deepcopy(tree)
    if cmd.verb == "set":
        path, value = words(list(cmd.words))
        set_path(new, path, value)  # ValueError for a range of too many interfaces
    elif cmd.verb == "unset":
        unset_path(new, unset_words(cmd.words))
    elif cmd.verb in ("patch", "replace"):
        if data is None:
            raise ValueError(f"nv config {cmd.verb}: no file was sent")
        new = patch_file(new if cmd.verb == "patch" else {}, data, cmd.file)
    else:
        raise ValueError(f"{cmd} does not edit a configuration")
    return from_tree(new, str(cmd)).tree


def unset_words(ws: tuple[str, ...]) -> Path:
    """The place `nv unset WORDS` names: every word a place (a value after a leaf is dropped)."""
    path: list[str] = []
    for w in ws:
        spec = spec_at(tuple(path))
        if isinstance(spec, Leaf):
            break
        path.append(w)
        if spec_at(tuple(path)) is None:
            raise ValueError(f"{'.'.join(path)}: no such place in NVUE's object tree")
    return tuple(path)


def patch_file(tree: dict, data: bytes, name: str) -> dict:
    """`tree` with a file's documents applied (`- set:` / `- unset:`, as startup.yaml holds
    them; a bare mapping is one `set`); TopologyError with the file's problems."""
    doc, lines = read_yaml_bytes(data, name)
    if isinstance(doc, dict):
        doc, lines = [{"set": doc}], {}
    problems: list[Problem] = []
    tree, _, _ = documents(doc, lines, name, problems, tree)
    if problems:
        raise TopologyError(problems)
    return tree


# --- a file of nv commands ------------------------------------------------------------------------------
def commands(data: bytes, source: str) -> list[tuple[int, Command]]:
    """A file of `nv` commands (one a line, `#` comments): each line's command; TopologyError
    naming every line that is not one."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TopologyError([Problem(source, "", "not UTF-8 text")]) from None
    out, problems = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            ws = shlex.split(line, comments=True)
            if not ws or ws[0] != "nv":
                raise ValueError("each line is an nv command (nv set ..., nv config apply, ...)")
            out.append((n, parse(ws[1:])))
        except ValueError as e:
            problems.append(Problem(source, "", str(e).splitlines()[0], n))
    if problems:
        raise TopologyError(problems)
    return out


def render(doc: Any, output: str) -> str:
    """A document as `-o json` or YAML (the default) prints it."""
    if output == "json":
        return json.dumps(doc, indent=2) + "\n"
    if isinstance(doc, bool):
        return "on\n" if doc else "off\n"
    return yaml_text(doc) if isinstance(doc, (dict, list)) else f"{doc}\n"
