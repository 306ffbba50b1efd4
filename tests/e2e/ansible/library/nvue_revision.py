#!/usr/bin/python
# The tests' module of a whole NVUE revision over the host's persistent httpapi connection (the flow of
# the nvidia.nvue collection's modules): create a revision, PATCH `data` at `path` into it, apply it
# with auto-prompt yes (`wait`: with ?wait=true, until the lab converged), poll it until it is done.
# Returns the revision, its state and progress, and when the apply started and ended (host clock).
from __future__ import annotations

import time
from urllib.parse import quote

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.connection import Connection

DOCUMENTATION = """
module: nvue_revision
short_description: one NVUE revision through the REST API (twin's e2e tests)
options:
  path: {type: str, default: ""}
  data: {type: dict, required: true}
  wait: {type: bool, default: false}
  timeout: {type: float, default: 300}
"""

DONE = ("applied", "apply_fail", "ays_fail", "invalid")


def main():
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "str", "default": ""},
            "data": {"type": "dict", "required": True},
            "wait": {"type": "bool", "default": False},
            "timeout": {"type": "float", "default": 300.0},
        }
    )
    api = Connection(module._socket_path)
    p = module.params
    status, doc = api.send_request(None, "revision", "POST")
    if status != 200:
        module.fail_json(msg=f"POST revision: {status} {doc}")
    rid = next(iter(doc))
    status, doc = api.send_request(p["data"], p["path"], "PATCH", "rev=" + quote(rid, safe=""))
    if status != 200:
        module.fail_json(msg=f"PATCH {p['path'] or '/'}: {status} {doc.get('detail', doc)}", revision=rid)
    at = "revision/" + quote(rid, safe="")
    started = time.time()
    status, doc = api.send_request(
        {"state": "apply", "auto-prompt": {"ays": "ays_yes"}}, at, "PATCH", "wait=true" if p["wait"] else ""
    )
    if status != 200:
        module.fail_json(msg=f"apply: {status} {doc}", revision=rid)
    deadline = started + p["timeout"]
    while doc.get("state") not in DONE and time.time() < deadline:
        time.sleep(0.2)
        status, doc = api.send_request(None, at, "GET")
    ended = time.time()
    tr = doc.get("transition", {})
    issues = [i.get("message") for i in tr.get("issue", {}).values()]
    result = {
        "revision": rid,
        "state": doc.get("state"),
        "progress": tr.get("progress", ""),
        "issues": issues,
        "started": started,
        "ended": ended,
        "changed": doc.get("state") == "applied",
    }
    if doc.get("state") != "applied":
        module.fail_json(msg=f"revision {rid} is {doc.get('state')}: {'; '.join(issues)}", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
