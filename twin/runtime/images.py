"""Node images without a registry.

base: `debootstrap --variant=minbase SUITE` into a temp dir, `docker import`ed
      as twin-base:SUITE-<hash>;
node: twin/images/node/Dockerfile built FROM that base as twin-node:SUITE-<hash>.

The recipes are package data (`importlib.resources`), so an installed wheel builds
the same images as a checkout. Each tag carries a hash of its recipe (and of the
base it builds on), so a build is skipped when nothing changed and redone when
something did; the build context is exactly the files hashed.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import tarfile
import tempfile
from importlib import resources
from pathlib import Path
from typing import Callable, Iterator

import docker
import yaml

from twin.base.errors import CommandError, TwinError

RECIPES = resources.files("twin") / "images"  # base/ and node/ (a Path for a checkout or an installed wheel)
SKIPPED = {"__pycache__"}  # what an installer's byte-compiling leaves beside the node's Python scripts
# Debian release of the node image: trixie has FRR 10.3 (the default), bookworm FRR 8.4.4.
# $TWIN_SUITE overrides the default for every command and test. FRR 8.4.4 cannot take
# day-2 changes of tenants on the netns VRF backend (frr-reload puts a new L3VNI in the
# default VRF) and loses routed traffic after a path failure; see docs/limitations.md.
DEFAULT_SUITE = os.environ.get("TWIN_SUITE") or "trixie"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


def _hash(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "big") + p)
    return h.hexdigest()[:12]


def _files(directory: Path) -> Iterator[tuple[str, Path]]:
    """Every file of a recipe (its path inside the recipe, the file), sorted by that path."""
    found = [p for p in directory.rglob("*") if p.is_file() and not SKIPPED & set(p.relative_to(directory).parts)]
    for f in sorted(found):
        yield str(f.relative_to(directory)), f


def _recipe_hash(name: str, *extra: str) -> str:
    parts = [e.encode() for e in extra]
    with resources.as_file(RECIPES / name) as directory:
        for rel, f in _files(directory):
            parts += [rel.encode(), f.read_bytes()]
    return _hash(*parts)


def _context(name: str) -> io.BytesIO:
    """The build context of recipe `name`: its files (as hashed), with their modes, as a tar."""
    buf = io.BytesIO()
    with resources.as_file(RECIPES / name) as directory, tarfile.open(fileobj=buf, mode="w") as tar:
        for rel, f in _files(directory):
            info = tarfile.TarInfo(rel)
            data = f.read_bytes()
            info.size, info.mode = len(data), f.stat().st_mode & 0o777
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    return buf


def base_tag(suite: str = DEFAULT_SUITE) -> str:
    return f"twin-base:{suite}-{_recipe_hash('base', suite)}"


def node_tag(suite: str = DEFAULT_SUITE) -> str:
    return f"twin-node:{suite}-{_recipe_hash('node', base_tag(suite))}"


def mirror() -> str:
    """The Debian mirror this machine's apt uses (deb822 or one-line sources)."""
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for src in sources:
        try:
            text = src.read_text()
        except OSError:
            continue
        for m in re.finditer(
            r"^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+/debian)/?\s*$"
            r"|^deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s+\S+",
            text,
            re.M,
        ):
            return (m.group(1) or m.group(2)).rstrip("/")
    return DEFAULT_MIRROR


def _exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _run(cmd: list[str]) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise CommandError("host", cmd, p.returncode, p.stdout[-4000:], p.stderr[-4000:])


def build_base(client: docker.DockerClient, suite: str, say: Callable[[str], None]) -> str:
    tag = base_tag(suite)
    recipe = yaml.safe_load((RECIPES / "base" / "base.yml").read_text()) or {}
    with tempfile.TemporaryDirectory(prefix="twin-rootfs-") as tmp:
        root = Path(tmp) / "root"
        cmd = ["debootstrap", f"--variant={recipe.get('variant', 'minbase')}"]
        if recipe.get("include"):
            cmd.append("--include=" + ",".join(recipe["include"]))
        say(f"debootstrap {suite} from {mirror()} (about a minute)")
        _run(cmd + [suite, str(root), mirror()])
        tarball = Path(tmp) / "rootfs.tar"
        _run(["tar", "-C", str(root), "-cf", str(tarball), "."])
        say(f"docker import -> {tag}")
        repo, _, version = tag.partition(":")
        client.api.import_image_from_file(str(tarball), repository=repo, tag=version)
    return tag


def build_node(client: docker.DockerClient, suite: str, say: Callable[[str], None]) -> str:
    tag = node_tag(suite)
    say(f"docker build twin/images/node -> {tag}")
    try:
        client.images.build(
            fileobj=_context("node"),
            custom_context=True,
            tag=tag,
            buildargs={"BASE": base_tag(suite)},
            rm=True,
            forcerm=True,
        )
    except docker.errors.BuildError as e:
        log = "".join(x.get("stream", "") or x.get("error", "") for x in e.build_log)[-4000:]
        raise TwinError(f"building {tag} failed: {e.msg}\n{log}") from None
    return tag


def ensure(
    client: docker.DockerClient,
    suite: str = DEFAULT_SUITE,
    force: bool = False,
    say: Callable[[str], None] = lambda _: None,
) -> str:
    """The node image tag, building base and node image only when their recipe changed."""
    if force or not _exists(client, base_tag(suite)):
        build_base(client, suite, say)
    tag = node_tag(suite)
    if force or not _exists(client, tag):
        build_node(client, suite, say)
    else:
        say(f"{tag} is up to date")
    return tag
