# The tests' own httpapi plugin for NVUE's REST API (`ansible_network_os: twin_nvue`), standing in for
# the nvidia.nvue collection's (not installable here): the same REST flow over the same persistent
# `ansible.netcommon.httpapi` connection, one per host (its address and port), HTTP Basic auth as the
# collection sends it, JSON both ways; an error's problem document is returned, not raised, so a
# module can say what NVUE refused.
from __future__ import annotations

import base64
import json

from ansible_collections.ansible.netcommon.plugins.plugin_utils.httpapi_base import HttpApiBase

DOCUMENTATION = """
name: twin_nvue
short_description: NVUE's REST API (nvue_v1), for twin's e2e tests
description:
  - The REST flow of NVIDIA's NVUE API over ansible.netcommon.httpapi.
version_added: "1.0.0"
"""

BASE = "/nvue_v1"


class HttpApi(HttpApiBase):
    def login(self, username, password):
        token = base64.b64encode(f"{username}:{password}".encode()).decode()
        self.connection._auth = {"Authorization": f"Basic {token}"}

    def handle_httperror(self, exc):
        return exc  # the problem document is the answer

    def send_request(self, data, path="", method="GET", params=""):
        """(HTTP status, decoded JSON) of one request to `BASE/path` (`params`: a query string)."""
        body = None if data is None else json.dumps(data)
        url = f"{BASE}/{path}".rstrip("/") + (f"?{params}" if params else "")
        response, buffer = self.connection.send(
            url, body, method=method, headers={"Content-Type": "application/json", "Accept": "application/json"}
        )
        text = buffer.read().decode("utf-8") or "null"
        return response.getcode(), json.loads(text)
