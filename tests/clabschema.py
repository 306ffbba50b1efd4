"""containerlab's topology schema as the tests read it.

Python's `re` has no Unicode classes (`\\p{N}`, `\\p{L}`): the schema's address patterns take a zone
index ("%eth0") of letters and digits there; here one of anything but '%' (twin's addresses have none).
Every test that validates a containerlab file loads the schema from here, so none meets the escape."""

from __future__ import annotations

import json
from pathlib import Path

PATH = Path(__file__).resolve().parent / "golden" / "interop" / "containerlab" / "clab.schema.json"
CLAB_SCHEMA = json.loads(PATH.read_text().replace("%[\\\\p{N}\\\\p{L}]+", "%[^%]+"))
