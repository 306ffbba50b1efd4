"""Lab names and lab directories: nothing outside $TWIN_HOME/labs/<lab> is ever removed."""

import pytest

from twin.base.errors import LabNameError, TwinError
from twin.lab import Lab
from twin.lifecycle import state

BAD_NAMES = [
    "",
    ".",
    "..",
    "../..",
    "/tmp/victim",
    "a/b",
    "aipod\n",
    "UPPER",
    "-lead",
    "trail-",
    "x" * 17,
    "tab\tname",
    "nul\x00",
    "ünï",
]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("TWIN_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "labs").mkdir(parents=True)
    victim = tmp_path / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "sub" / "f").write_text("precious")
    return tmp_path


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_lab_names_are_refused_before_any_path_is_made(name, home):
    with pytest.raises(LabNameError, match="is not allowed: 1-16 lowercase"):
        state.labdir(name)
    with pytest.raises(LabNameError):
        Lab(name)
    with pytest.raises(LabNameError):
        Lab.open(name)
    assert (home / "victim" / "sub" / "f").read_text() == "precious"
    assert (home / "home" / "labs").is_dir()


def test_removal_refuses_anything_but_a_lab_directory(home):
    labs = home / "home" / "labs"
    (labs / "evil").symlink_to(home / "victim")
    with pytest.raises(TwinError, match="refusing to remove"):
        state.remove(labs / "evil")
    for outside in (home / "victim", labs, labs / "ok" / "..", home / "victim" / "sub"):
        with pytest.raises(TwinError, match="refusing to remove"):
            state.remove(outside)
    assert (home / "victim" / "sub" / "f").read_text() == "precious"
    assert state.known_labs() == [], "a symlink is not a lab"


def test_a_lab_directory_and_a_node_directory_are_removed(home):
    d = state.labdir("mylab")
    (d / "host1").mkdir(parents=True)
    (d / "escape").symlink_to(home / "victim")
    with pytest.raises(TwinError, match="refusing to remove"):
        state.remove_node(d, "escape")
    with pytest.raises(TwinError, match="refusing to remove"):
        state.remove_node(d, "..")
    assert state.remove_node(d, "host1") and not (d / "host1").exists()
    assert state.known_labs() == ["mylab"]
    assert state.remove(d) and not d.exists()
    assert not state.remove(d), "nothing left: False, no error"
    assert (home / "victim" / "sub" / "f").read_text() == "precious"


def test_a_labs_runtime_is_asked_else_the_one_that_made_it_else_the_environments_else_docker(home, monkeypatch):
    made = []
    monkeypatch.setattr(state, "make_runtime", lambda name, removing=False: made.append((name, removing)) or name)
    d = state.labdir("clab")
    monkeypatch.delenv(state.RUNTIME_ENV, raising=False)
    assert state.runtime_of(d) is None, "no lab there, no environment: the registry's default (docker)"
    monkeypatch.setenv(state.RUNTIME_ENV, "containerlab")
    assert state.runtime_of(d) == "containerlab"
    state.save(d, state.LabState(name="clab", topology="t.yml", image="i", runtime="docker"))
    assert state.runtime_of(d) == "docker", "the one that made it, over the environment's"
    assert state.runtime_of(d, "containerlab", removing=True) == "containerlab"
    (d / state.STATE).write_text("{broken")
    assert state.runtime_of(d, removing=True) == "containerlab", "a broken directory records none"
    assert made[-1] == ("containerlab", True)
