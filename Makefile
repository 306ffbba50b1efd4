# twin: two commands set everything up on a fresh Debian/Ubuntu machine (as root):
#   make twin-up    installs Docker if missing, builds images and venv, brings up the default lab
#   make test       unit + end-to-end tests against the real Docker engine
PYTHON ?= python3
VENV   ?= .venv
TWIN    = $(VENV)/bin/twin
LAB    ?= aipod
TOPOLOGY ?= topologies/aipod.yml
PYTEST_ARGS ?=
PYTEST_WORKERS ?= 3
SOAK_ARGS ?=
CHAOS_ARGS ?=
PROVE_ARGS ?=
COMPARE_ARGS ?=
LARGE_ARGS ?=
BENCH_SERVER_ARGS ?=

.PHONY: host venv images twin-up twin-down lint test test-unit docs docs-check bench bench-large bench-lint bench-nvue bench-nvue-qos bench-compare bench-timeline bench-server soak chaos prove clean

host:
	@twin/lifecycle/host-setup.sh

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

images: host venv
	$(TWIN) image build

twin-up: images
	$(TWIN) doctor --topology $(TOPOLOGY)
	$(TWIN) up $(TOPOLOGY)
	$(TWIN) status $(LAB)

twin-down: venv
	$(TWIN) down $(LAB)

# ruff (lint) over the code and mypy over twin/, as configured in pyproject.toml (`make test` runs it after
# `images`, which sets the host up first: a fresh machine may lack python3-venv)
lint: venv
	$(VENV)/bin/ruff check twin tests bench scripts
	$(VENV)/bin/ruff format --check twin tests bench scripts
	$(VENV)/bin/mypy

# the tests in parallel, PYTEST_WORKERS at a time (pytest-xdist; a module stays on one worker, the e2e
# modules first: tests/parallel.py; PYTEST_WORKERS=0 runs them one after another), but the slow proofs
# (`make prove`); twin compiled first, once, for the many `twin` commands the tests run
test: images lint docs-check
	$(VENV)/bin/python -m compileall -q twin tests
	$(VENV)/bin/pytest -v -n $(PYTEST_WORKERS) -m "not prove" --durations=25 $(PYTEST_ARGS) tests

# the documentation site into site/ (the command reference and the front page generated as it builds)
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# the site built strictly (a broken link or reference fails) without writing anything in the tree
docs-check: venv
	d=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -d $$d; rc=$$?; rm -rf $$d; exit $$rc

test-unit: venv
	$(VENV)/bin/pytest -v $(PYTEST_ARGS) tests/unit

bench: images
	$(VENV)/bin/python bench/run.py
	$(VENV)/bin/python bench/watch.py

# the largest lab this machine holds (8 x 248, 256 FRR nodes: converged, or refused by admission and
# then run with the deadline it names), three times alone and three times beside the default lab, and
# 128 FRR nodes beside another lab's bring-up with --loaded (not part of make test; ~40 minutes, loads
# the whole machine)
bench-large: images
	$(VENV)/bin/python bench/large.py $(LARGE_ARGS)

# twin lint of the 8 x 248 Clos's NVUE export and rendered frr.conf files, as a command (issue 45: < 5 s)
bench-lint: venv
	$(VENV)/bin/python bench/lint.py $(LINT_ARGS)

# a blank NVUE fabric's day 0 by one Ansible playbook (8 forks, each switch's NVUE API at its management
# address): 8 and 16 switches, every revision applied < 10 s, converged < 30 s after the last (issue 33)
bench-nvue: images
	$(VENV)/bin/python bench/nvue_fabric.py $(NVUE_ARGS)

# aipod from its NVUE export, plain and with RoCE QoS + an ACL on every port, interleaved (issue 44: within 10 %)
bench-nvue-qos: images
	$(VENV)/bin/python bench/nvue_qos.py $(NVUE_QOS_ARGS)

# twin against munet 0.17.3 (FRR's namespace emulator) on the same Clos, interleaved
# (not part of make test; installs munet in bench/munet/.venv and Debian's frr on the host)
bench-compare: images
	$(VENV)/bin/python bench/compare.py $(COMPARE_ARGS)

# a bring-up's timeline: the bench's 4 x 20 Clos watched per node (containers, links, FRR's boot, sessions,
# routes, the barrier), its critical path and the waits that are not work (issue 46; ~30 s a run;
# TIMELINE_ARGS="--runs 3 --tree base=/path/to/checkout --tree new=." compares checkouts)
bench-timeline: images
	$(VENV)/bin/python bench/timeline.py $(TIMELINE_ARGS)

# twin serve: create-to-converged through the API beside `twin up`, and 20 clients polling operations
# and events while two labs come up through it (not part of make test; a few minutes)
bench-server: images
	$(VENV)/bin/python bench/server.py $(BENCH_SERVER_ARGS)

# aipod and pod8 side by side for 60 min, verify every 5 min, status every minute
# (not part of make test; SOAK_ARGS="--minutes 10" for a shorter one)
soak: images
	$(VENV)/bin/python bench/soak.py $(SOAK_ARGS)

# 20 random SIGKILLs of `up`, `apply`, `rehearse` and `fault`, and dockerd restarted under a running lab:
# nothing may be left behind (not part of make test; CHAOS_ARGS="--rounds 5" for fewer)
chaos: images
	$(VENV)/bin/python bench/chaos.py $(CHAOS_ARGS)

# verify proves itself: the suite's slow proofs (tests marked `prove`, which `make test` leaves out),
# then `twin verify` 20 times on aipod and on pod8 (0 failures), the whole `twin verify aipod --prove`
# twice and the proof of the services lab's services twice (every element caught and restored, the
# same verdicts) (not part of make test; PROVE_ARGS="--verify-runs 5 --proofs 1" for a shorter one,
# --labs '' for the services lab alone)
prove: images
	$(VENV)/bin/pytest -v -m prove tests/e2e
	$(VENV)/bin/python bench/prove.py $(PROVE_ARGS)

clean:
	rm -rf $(VENV) *.egg-info bench-results site
