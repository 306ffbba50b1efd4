"""The readers under every front door, each on its own: opening below a directory without a link
leading out (both ways: openat2 and the O_NOFOLLOW walk), a node's files read without following
its links, JSON without recursion, CSV rows bounded, and the YAML an NVUE front end reads."""

from __future__ import annotations

import os

import pytest

from twin.base import safeopen
from twin.base.errors import Problem, TopologyError
from twin.runtime import nodefs
from twin.topology import csv_safe, files, json_safe
from twin.topology.yaml_safe import read_yaml


@pytest.fixture(params=["openat2", "walk"])
def way(request, monkeypatch):
    """Each test once with the kernel's openat2, once with the walk older kernels get."""
    if request.param == "walk":
        monkeypatch.setattr(safeopen, "_has_openat2", False)
    elif safeopen._SYS_OPENAT2 is None:
        pytest.skip("no openat2 on this architecture")
    return request.param


@pytest.fixture
def tree(tmp_path):
    """d/ holds a file, links in and out of it, a FIFO; `outside` is the host's file links aim at."""
    (tmp_path / "outside").write_text("secret\n")
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "f").write_text("hi\n")
    os.symlink("sub/f", d / "in")
    os.symlink("../outside", d / "up")
    os.symlink(str(tmp_path / "outside"), d / "abs")
    os.symlink("sub", d / "subdir")
    os.symlink("loop", d / "loop")
    os.mkfifo(d / "fifo")
    return d


@pytest.mark.parametrize(
    "path, beneath, no_links",
    [
        ("sub/f", "hi\n", "hi\n"),
        ("/sub/f", "hi\n", "hi\n"),
        ("sub/../sub/f", "hi\n", "hi\n"),
        ("in", "hi\n", "in is a symbolic link (to sub/f)"),
        ("subdir/f", "hi\n", "subdir is a symbolic link (to sub)"),
        (
            "up",
            "up (a symbolic link to ../outside) leads outside the directory",
            "up is a symbolic link (to ../outside)",
        ),
        ("abs", "is a symbolic link (to /", "abs is a symbolic link (to /"),
        ("../outside", "climbs above the directory (..)", FileNotFoundError),  # a node's / is its root
        ("loop", "loop is a symbolic link (to loop), one link too many (40)", "loop is a symbolic link (to loop)"),
        ("fifo", OSError, OSError),
        ("sub", IsADirectoryError, IsADirectoryError),
        ("nope", FileNotFoundError, FileNotFoundError),
    ],
)
def test_a_path_below_a_directory_is_opened_as_its_mode_allows(way, tree, path, beneath, no_links):
    for mode, expected in ((safeopen.BENEATH, beneath), (safeopen.NO_LINKS, no_links)):
        if isinstance(expected, type):
            with pytest.raises(expected):
                safeopen.read_under(tree, path, mode, 100)
        elif expected == "hi\n":
            assert safeopen.read_under(tree, path, mode, 100) == b"hi\n"
        else:
            with pytest.raises(safeopen.LinkRefused) as e:
                safeopen.read_under(tree, path, mode, 100)
            assert expected in e.value.why and "secret" not in str(e.value), (mode, str(e.value))


def test_a_nodes_files_are_read_without_following_its_links(way, tree):
    me = os.getpid()  # /proc/<pid>/root of this process is the host's /: links in tree lead where they say
    at = str(tree)
    assert nodefs.read(me, f"{at}/sub/f", "me") == b"hi\n" and nodefs.size(me, f"{at}/sub/f", "me") == 3
    assert nodefs.read(me, f"{at}/nothing", "me") is None and not nodefs.exists(me, f"{at}/nothing", "me")
    for inside, link in (("abs", "abs"), ("up", "up"), ("subdir/f", "subdir")):
        with pytest.raises(nodefs.NodeFileError) as e:
            nodefs.read(me, f"{at}/{inside}", "lab/leaf1")
        said = str(e.value)
        assert said.startswith(f"lab/leaf1: {at}/{inside}: {at.lstrip('/')}/{link} is a symbolic link (to ")
        assert "not followed; a node is not trusted" in said and "secret" not in said
    with pytest.raises(nodefs.NodeFileError, match="not a regular file"):
        nodefs.read(me, f"{at}/fifo", "me")
    with pytest.raises(nodefs.NodeFileError, match="larger than 2 bytes"):
        nodefs.read(me, f"{at}/sub/f", "me", limit=2)
    nodefs.remove(me, f"{at}/abs", "me")
    assert not (tree / "abs").is_symlink() and (tree.parent / "outside").read_text() == "secret\n", (
        "the link goes, what it points to stays"
    )
    with pytest.raises(nodefs.NodeFileError):
        nodefs.remove(me, f"{at}/subdir/f", "me")  # not through a linked directory either
    assert (tree / "sub" / "f").exists()


def test_deep_json_is_refused_without_recursion_at_its_place():
    for text in ("[" * 100_000, '{"a": ' * 50_000 + "1" + "}" * 50_000, "\n\n  " + "[" * 65 + "]" * 65):
        with pytest.raises(files.Refused) as e:
            json_safe.parse(text, files.AIR_JSON)
        assert e.value.message.startswith("nesting deeper than 64 levels") and e.value.line in (1, 3)
    assert json_safe.parse("[" * 64 + "]" * 64, files.AIR_JSON)[0] is not None


def test_json_places_every_key_and_item_and_what_json_lets_through():
    text = '{\n  "a": [1,\n        {"b": NaN}],\n  "c": 1e999,\n  "d": ' + "7" * 40 + ',\n  "a": "again"\n}'
    data, lines, problems = json_safe.parse(text, files.AIR_JSON)
    assert lines[("a",)] == 2 and lines[("a", 1)] == 3 and lines[("a", 1, "b")] == 3 and lines[("d",)] == 5
    assert [(m.split(" (")[0].split(":")[0], line) for m, line, _ in problems] == [
        ("NaN is not JSON", 3),
        ("the number '1e999' is too large for a number", 4),
        ("the number '7777777777777777777777777777777777777777' has 40 characters", 5),
        ("key 'a' is defined twice", 6),
    ]
    with pytest.raises(files.Refused, match="the file is empty"):
        json_safe.parse(" \n", files.LLDP_JSON)
    with pytest.raises(files.Refused) as e:
        json_safe.parse('{"a": 1,\n "b": }', files.LLDP_JSON)
    assert (e.value.line, e.value.column) == (2, 7) and e.value.message.startswith("not JSON: Expecting value")


def test_json_above_its_value_count_is_refused():
    small = files.Format("test file", "a test file", max_values=10)
    with pytest.raises(files.Refused, match="more than 10 values"):
        json_safe.parse("[" + ",".join(["1"] * 11) + "]", small)


def test_csv_rows_are_bounded_and_each_bad_one_named():
    rows, problems = csv_safe.rows(
        'a,b\n"' + "x" * 200_000 + '",c\nd,e\nf,' + "y" * 1001 + "\ng,h\n", "c.csv", files.CABLES_CSV
    )
    assert [r[0] for r in rows] == [1, 3, 5] and [(p.line, p.message) for p in problems] == [
        (2, "not a CSV row: field larger than field limit (131072)"),
        (4, "a cell of 1001 characters: a cell holds at most 1000"),
    ]
    few = files.Format("cable CSV", "a cable CSV", max_values=2)
    rows, problems = csv_safe.rows("a\nb\nc\nd\n", "c.csv", few)
    assert len(rows) == 2 and problems == [
        Problem("c.csv", "", "more than 2 rows: far more than any file of its kind holds; the rest was not read", 3)
    ]


def test_an_nvue_file_reads_yaml_1_1_booleans_and_quoted_keys_as_text(tmp_path):
    f = tmp_path / "startup.yaml"
    f.write_text(
        "- set:\n    interface:\n      swp1:\n        link: {state: {up: {}}}\n"
        "    router:\n      bgp: {enable: on}\n    evpn: {enable: off}\n    nve:\n      vxlan:\n"
        "        mac-learning: yes\n    bridge:\n      domain:\n        br_default:\n          vlan:\n"
        "            '10': {vni: {'10': {}}}\n"
    )
    data, lines = read_yaml(f, files.NVUE)
    assert data[0]["set"]["router"]["bgp"]["enable"] is True and data[0]["set"]["evpn"]["enable"] is False
    assert list(data[0]["set"]["bridge"]["domain"]["br_default"]["vlan"]) == ["10"]
    assert lines[(0, "set", "evpn")] == 7
    assert read_yaml(f)[0] == data, "read_yaml(path) (a topology's limits) reads it the same"
    f.write_bytes(b"- set: {a: \xff}\n")
    with pytest.raises(TopologyError, match=r"startup.yaml:1:12: the file is not UTF-8"):
        read_yaml(f, files.NVUE)
    f.write_text("- set: " + "{a: " * 70 + "1" + "}" * 70 + "\n")
    with pytest.raises(TopologyError, match="nesting deeper than 64 levels: an NVUE startup file needs about 12"):
        read_yaml(f, files.NVUE)
