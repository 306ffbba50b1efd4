"""What a node binds, carried faithfully by `twin export` (issue 34): a bound directory read by the
reader's directory rule (a link inside is what it leads to, a link out refused and named), binary
files as their bytes, sockets and devices kept as binds with a note, the limits said when exceeded;
containerlab's file schema-valid, Clabernetes' ConfigMaps with the binary files in binaryData."""

from __future__ import annotations

import base64
import json
import os
import socket
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from twin.base.errors import TwinError
from twin.cli import main
from twin.config.render import render_lab
from twin.interop import export_containerlab
from twin.interop.clabernetes import build_clabernetes
from twin.interop.containerlab import MAX_BOUND_FILES
from twin.topology import load

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "tests/golden/interop/containerlab/clab.schema.json").read_text())
BINARY = bytes(range(256)) * 4 + b"\xff\xfe\0"  # no text: NULs, bytes that are no UTF-8


def topology(tmp_path: Path, *binds: str) -> Path:
    path = tmp_path / "t.yml"
    path.write_text(
        "name: binds\nnodes:\n  spine1: {kind: spine}\n  leaf1: {kind: leaf}\n"
        f"  host1: {{kind: host, binds: {json.dumps(list(binds))}}}\n"
        "links:\n  - [spine1, leaf1]\n  - [leaf1, host1]\n"
    )
    return path


@pytest.fixture
def bound(tmp_path) -> Path:
    """A directory a node binds: text, a binary executable, a link inside, a subdirectory, a socket."""
    d = tmp_path / "data"
    (d / "sub").mkdir(parents=True)
    (d / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (d / "run.sh").chmod(0o755)
    (d / "blob.bin").write_bytes(BINARY)
    (d / "sub" / "conf.txt").write_text("x = 1\n")
    os.symlink("sub/conf.txt", d / "alias.txt")  # a link that stays inside: carried as what it leads to
    os.symlink("..", d / "sub" / "up")  # inside too (the bound directory itself): walked once
    return d


def export(tmp_path: Path, path: Path) -> tuple[dict, Path, list[str]]:
    fabric = load(path)
    notes: list[str] = []
    out = export_containerlab(
        fabric, render_lab(fabric, "netns"), tmp_path / "out", image="twin-node:t", say=notes.append
    )
    return yaml.safe_load(out.read_text()), out.parent, notes


@pytest.mark.parametrize("target", ["secret.txt (absolute)", "../../secret.txt"])
def test_a_link_out_of_a_bound_directory_is_refused_and_named(tmp_path, bound, target):
    (tmp_path / "secret.txt").write_text("host secret\n")
    link = str(tmp_path / "secret.txt") if "absolute" in target else target
    os.symlink(link, bound / "sub" / "leak")
    with pytest.raises(TwinError) as e:
        export(tmp_path, topology(tmp_path, f"{bound}:/opt/data:ro"))
    said = str(e.value)
    assert said.startswith(f"host1: cannot carry {bound} (bound on /opt/data) into the export: sub/leak")
    assert said.endswith(f"not followed; twin reads nothing outside the directory it was given ({bound})")
    assert f"symbolic link (to {link})" in said or f"symbolic link to {link})" in said, said
    assert not (tmp_path / "out").exists(), "nothing written"


def test_a_bound_directory_is_carried_as_its_bytes_with_a_socket_kept_as_a_bind(tmp_path, bound):
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(bound / "sub" / "api.sock"))
    try:
        doc, out, notes = export(tmp_path, topology(tmp_path, f"{bound}:/opt/data:ro"))
    finally:
        sock.close()
    binds = doc["topology"]["nodes"]["host1"]["binds"]
    assert binds == [
        "host1:/etc/twin:ro",
        "host1/opt_data_alias.txt:/opt/data/alias.txt:ro",
        "host1/opt_data_blob.bin:/opt/data/blob.bin:ro",
        "host1/opt_data_run.sh:/opt/data/run.sh:ro",
        "host1/opt_data_sub_conf.txt:/opt/data/sub/conf.txt:ro",
        f"{bound}/sub/api.sock:/opt/data/sub/api.sock:ro",
    ]
    assert (out / "host1/opt_data_blob.bin").read_bytes() == BINARY, "a binary file, byte for byte"
    assert (out / "host1/opt_data_alias.txt").read_text() == "x = 1\n"
    assert os.access(out / "host1/opt_data_run.sh", os.X_OK) and not os.access(out / "host1/opt_data_blob.bin", os.X_OK)
    assert notes == [
        f"host1 binds a socket, {bound}/sub/api.sock, on /opt/data/sub/api.sock: kept as a bind of "
        "this host's (the exported lab needs it on the host it runs on)"
    ]
    assert not list(jsonschema.Draft7Validator(SCHEMA).iter_errors(doc))


def test_a_bound_socket_or_device_is_kept_as_a_bind_with_a_note(tmp_path):
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "docker.sock"))
    try:
        doc, _, notes = export(
            tmp_path, topology(tmp_path, f"{tmp_path}/docker.sock:/var/run/docker.sock", "/dev/null:/dev/null")
        )
    finally:
        sock.close()
    assert doc["topology"]["nodes"]["host1"]["binds"][1:] == [
        f"{tmp_path}/docker.sock:/var/run/docker.sock",
        "/dev/null:/dev/null",
    ]
    assert [n.split(",")[0] for n in notes] == ["host1 binds a socket", "host1 binds a device"]


def test_the_limits_are_said_when_exceeded(tmp_path):
    many = tmp_path / "many"
    many.mkdir()
    for i in range(MAX_BOUND_FILES + 1):
        (many / f"f{i}").write_text("x")
    with pytest.raises(TwinError) as e:
        export(tmp_path, topology(tmp_path, f"{many}:/many"))
    assert str(e.value) == (
        f"host1: cannot carry {many} (bound on /many) into the export: holds more than 256 "
        "files; an export carries at most 256 files a node binds, each at most 1 MiB"
    )
    (tmp_path / "big.bin").write_bytes(b"\0" * ((1 << 20) + 1))
    with pytest.raises(TwinError) as e:
        export(tmp_path, topology(tmp_path, f"{tmp_path}/big.bin:/big.bin"))
    assert "the file is larger than 1 MiB (1048576 bytes), the limit for a bound file" in str(e.value)
    assert str(e.value).endswith("an export carries at most 256 files a node binds, each at most 1 MiB")


def test_clabernetes_carries_binary_files_in_binary_data(tmp_path, bound):
    fabric = load(topology(tmp_path, f"{bound}:/opt/data"))
    docs = build_clabernetes(fabric, render_lab(fabric, "netns"), image="twin-node:t")
    (cm,) = [d for d in docs if d["metadata"]["name"] == "binds-host1-files"]
    assert base64.b64decode(cm["binaryData"]["opt_data_blob.bin"]) == BINARY
    assert cm["data"]["opt_data_sub_conf.txt"] == "x = 1\n" and "opt_data_blob.bin" not in cm["data"]


def test_the_cli_says_the_notes(tmp_path):
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s.sock"))
    try:
        res = CliRunner().invoke(
            main,
            [
                "export",
                str(topology(tmp_path, f"{tmp_path}/s.sock:/run/s.sock")),
                "--format",
                "containerlab",
                "-o",
                str(tmp_path / "out"),
                "--image",
                "twin-node:t",
            ],
        )
    finally:
        sock.close()
    assert res.exit_code == 0, res.output
    assert f"note: host1 binds a socket, {tmp_path}/s.sock, on /run/s.sock: kept as a bind" in res.output
