"""`twin` command line: thin commands over `twin.Lab` and the stages below it, one module
per command group (lab, day2, faults, checks, baseline, inventory, lint), one error style (`common`).
Progress goes to stderr, results to stdout; exit codes: 0 success, 1 failure.

A command's module is imported only when that command runs (`COMMANDS`, click's LazyGroup
pattern): `twin --help` lists every command with its short help from this table and imports none,
and `twin status` loads what `status` needs, not the NVUE service or the traffic generator.
tests/unit/test_cli_lazy.py holds the table to the commands' own help."""

from twin.cli.common import TwinGroup, main

# command -> (the module that registers it, its short help: the first sentence of its help)
COMMANDS: dict[str, tuple[str, str]] = {
    "apply": (
        "twin.cli.day2",
        "Apply CHANGE to the running LAB: FRR reload (no restart), kernel reconciled, then wait for convergence.",
    ),
    "baseline": (
        "twin.cli.baseline",
        "Record a lab's behaviour (sessions, prefix counts, routes per VRF, VNIs) and compare the lab with it later.",
    ),
    "clone": (
        "twin.cli.interop",
        "A twin of a network that exists, from its devices' FRR configs and who is cabled to whom.",
    ),
    "counters": (
        "twin.cli.observe",
        "Counters of LAB (or NODE) now: ports, RoCEv2 by class and CNPs, sessions, VNIs, VRF routes.",
    ),
    "doctor": ("twin.cli.doctor", "Say what this machine gives twin and what each lack changes."),
    "down": ("twin.cli.lab", "Remove everything LAB owns (also after a failed or killed `up`)."),
    "events": (
        "twin.cli.observe",
        "What happened in LAB: drops by twin's rules, carrier, sessions, routes, twin's own actions.",
    ),
    "exec": ("twin.cli.lab", "Run CMD in NODE of LAB: twin exec LAB NODE -- vtysh -c 'show bgp summary'."),
    "export": (
        "twin.cli.interop",
        "Write TOPOLOGY (a file) or LAB (a lab here) in another tool's format: containerlab (a .clab.yml with"
        " the files it binds), clabernetes (Kubernetes manifests), air-json or air-dot (NVIDIA Air "
        "topologies), nvue (each spine's, leaf's and DPU's startup.yaml, Cumulus Linux 5.9 / DOCA HBN: "
        "DIR/<node>/startup.yaml).",
    ),
    "exporter": ("twin.cli.observe", "Serve LAB's counters, sessions and drop events to Prometheus (GET /metrics)."),
    "fault": ("twin.cli.faults", "Apply faults to a running lab: links, loss, nodes, FRR daemons."),
    "image": ("twin.cli.lab", "Node images (built without a registry)."),
    "import": (
        "twin.cli.interop",
        "Turn FILE into a twin topology, DIR/<lab>.yml, checked as `twin up` would check it.",
    ),
    "inventory": (
        "twin.cli.inventory",
        "Write an Ansible or Nornir inventory of LAB's nodes (switches, DPUs and routers at their management "
        "address over SSH, hosts through their containers), or with --format nvue the NVUE REST API of its "
        "NVUE nodes at their management address, port 8765 (ansible.netcommon.httpapi, nvidia.nvue).",
    ),
    "lint": (
        "twin.cli.lint",
        "Check node configs against TOPOLOGY's intent, without Docker, in seconds: DIR is a config directory "
        "as `twin up --configs` takes it (DIR/<node>/startup.yaml, DIR/<node>/frr.conf, DIR/<node>.conf), "
        "FILE one node's file of such a directory (the node is named by its directory or its name): a "
        "pre-commit hook gives the files it changes.",
    ),
    "list": ("twin.cli.lab", "Labs on this host: from Docker labels and lab directories."),
    "plan": (
        "twin.cli.day2",
        "Show what CHANGE would do to LAB: topology changes, per-node config diffs, FRR reloads and kernel commands.",
    ),
    "rehearse": (
        "twin.cli.day2",
        "Rehearse CHANGE on LAB with RoCE traffic flowing between all same-tenant hosts; report the impact.",
    ),
    "serve": (
        "twin.cli.server",
        "Serve the twin API (/v1, OpenAPI at /openapi.json, reference at /docs, the labs page at /): labs "
        "made, changed, verified, rehearsed, snapshotted and removed through a token, with owners, quotas and"
        " expiry.",
    ),
    "status": (
        "twin.cli.lab",
        "Nodes, sessions, tenants of LAB, compared with its intent; exit 1 if anything is missing.",
    ),
    "traffic": (
        "twin.cli.traffic",
        "Send one RoCEv2 flow from host SRC to host DST's address and report what arrived where.",
    ),
    "up": ("twin.cli.lab", "Bring a lab up from TOPOLOGY and wait until it has converged."),
    "validate": (
        "twin.cli.validate",
        "Validate and render TOPOLOGY without creating anything, and say which VRF backend it would run on "
        "(and why), what it would take of this host's limits and CPU, and the BGP timers it would get here.",
    ),
    "verify": (
        "twin.cli.checks",
        "Verify LAB against its topology (state, RoCE traffic, isolation, zero-trust) and the user's checks "
        "(its topology's checks: section, and --checks files).",
    ),
    "wait": (
        "twin.cli.lab",
        "Wait until LAB has converged (the barrier of `twin up`): after `twin up --no-wait` and the scripts "
        "that configure its nodes.",
    ),
    "watch": ("twin.cli.observe", "A live view of LAB: ports with rates, RoCE counters, sessions, latest events."),
    "web": (
        "twin.cli.observe",
        "A live page of LAB: the fabric, links by state, nodes' sessions, VNIs, counters, events.",
    ),
}

main.lazy = COMMANDS

__all__ = ["main", "COMMANDS", "TwinGroup"]
