"""A lab's NVUE service (`nvued`): what it keeps in the lab directory, its start, its stop
and whether it answers. `twin up` of a lab whose nodes run NVUE starts it (`Lab.up`), `twin
apply` starts it again if it is not running, `twin down` stops it (`cleanup.remove_all`).

In `<lab dir>/_nvue/` ('_': no node has that name), none of it visible to a node:

    service.json      its record: pid, start time, command line, and per FRR node its HTTPS
                      port on 127.0.0.1 and its socket (`daemon`)
    service.log       its stderr: one line per failed request, never a traceback
    password          user `cumulus`'s, for HTTP Basic auth and SSH on the nodes: made per lab (or the
                      topology's mgmt.password), mode 0600, never a default
    cert.pem key.pem  its self-signed certificate (127.0.0.1, localhost, and each node's management
                      address and names) and key (mode 0600)
    saved/<node>.yaml what `nv config save` saved (`rev=startup`)
    run/<node>/       bound read-only into the node at /run/nvue: nvue.sock, the node's `nv`; api.sock,
                      its NVUE API on its management address (eth0:8765, through the node's relay)
    nv                the `nv` command, bound read-only into every FRR node
"""
from __future__ import annotations

import base64
import datetime
import http.client
import ipaddress
import json
import os
import secrets
import ssl
from pathlib import Path
from typing import Callable

import twin.lifecycle.daemon as daemon  # the module, not the package: lifecycle imports this room
from twin import nvue
from twin.base import timeouts
from twin.base.errors import TwinError
from twin.config.naming import NVUE_DIR, container_name, password_file
from twin.nvue import bonds as nvue_bonds
from twin.runtime import kernel
from twin.topology.model import Fabric

USER = "cumulus"          # NVUE's user on a Cumulus switch


def root(d: Path) -> Path:
    """The service's directory in lab directory `d` (made, for its owner only)."""
    r = d / NVUE_DIR
    if d.is_dir() and not r.exists():
        r.mkdir(mode=0o700)
    return r


def record_file(d: Path) -> Path:
    return root(d) / "service.json"


def saved(d: Path, node: str) -> Path:
    return root(d) / "saved" / f"{node}.yaml"


def password(d: Path) -> str:
    """The lab's API password, made on first use (24 random bytes, mode 0600)."""
    root(d)
    f = password_file(d)
    try:
        return _private_read(f)
    except FileNotFoundError:
        pass
    _private_write(f, secrets.token_urlsafe(24).encode())
    return _private_read(f)


def set_password(d: Path, text: str) -> None:
    """The lab's password is `text` (the topology's `mgmt.password`)."""
    root(d)
    _private_write(password_file(d), text.encode())


def certificate(d: Path, lab: str, fabric: Fabric | None = None) -> tuple[Path, Path]:
    """The lab's self-signed certificate and key, made on first use, and again when they do not name
    every node of `fabric` on the management network: its address and its names (`twin-<lab>-<node>`,
    the node's own), besides 127.0.0.1 and localhost."""
    cert, key = root(d) / "cert.pem", root(d) / "key.pem"
    names, addresses = _subjects(fabric)
    if cert.is_file() and key.is_file() and not cert.is_symlink() and not key.is_symlink() and _covers(
            cert, names, addresses):
        return cert, key
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    k = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"twin lab {lab} NVUE API")])
    now = datetime.datetime.now(datetime.timezone.utc)
    sans = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    c = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(k.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=825))
         .add_extension(x509.SubjectAlternativeName(sans), False)
         .sign(k, hashes.SHA256()))
    _private_write(key, k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()))
    _private_write(cert, c.public_bytes(serialization.Encoding.PEM), 0o644)
    return cert, key


def _subjects(fabric: Fabric | None) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) the certificate must name."""
    names, addresses = ["localhost"], ["127.0.0.1"]
    for n in fabric.managed() if fabric is not None else ():
        if n.mgmt:
            names += [container_name(fabric.name, n.name), n.name]
            addresses.append(n.mgmt)
    return names, addresses


def _covers(cert: Path, names: list[str], addresses: list[str]) -> bool:
    """Does the certificate in `cert` name all of them?"""
    from cryptography import x509

    try:
        c = x509.load_pem_x509_certificate(cert.read_bytes())
        san = c.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, x509.ExtensionNotFound):
        return False
    have = set(san.get_values_for_type(x509.DNSName)) | {str(a) for a in san.get_values_for_type(x509.IPAddress)}
    return set(names) | set(addresses) <= have


def _private_write(f: Path, data: bytes, mode: int = 0o600) -> None:
    tmp = f.with_name(f".{f.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, f)


def _private_read(f: Path) -> str:
    fd = os.open(f, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as fh:
        return fh.read().strip()


# --- its life ----------------------------------------------------------------------------------------
def record(d: Path) -> dict | None:
    """The service's record, when the process it names runs."""
    rec = daemon.read(record_file(d))
    return rec if daemon.alive(rec) else None


def start(d: Path, lab: str, argv: list[str]) -> dict:
    """The lab's NVUE service running (started if it is not): its record, once it listens."""
    running = record(d)
    if running and running.get("listeners") is not None:
        return running
    password(d)
    certificate(d, lab)
    return daemon.spawn(record_file(d), argv, root(d) / "service.log", ready=lambda r: "listeners" in r)


def stop(d: Path) -> bool:
    """The lab's NVUE service stopped (exactly the process recorded), its sockets gone."""
    was = daemon.stop(record_file(d))
    run = root(d) / "run"
    for sock in (run.glob("*/*.sock") if run.is_dir() and not run.is_symlink() else ()):
        sock.unlink(missing_ok=True)
    return was


def status(d: Path) -> dict | None:
    """Where the service listens and whether it answers (None: the lab has none)."""
    rec = daemon.read(record_file(d))
    if rec is None:
        return None
    out = {"pid": rec["pid"], "running": daemon.alive(rec), "listeners": rec.get("listeners") or {}}
    out["answers"], out["error"] = probe(d, rec) if out["running"] else (False, "the process is gone")
    return out


def probe(d: Path, rec: dict) -> tuple[bool, str]:
    """(True, "") when the service answers an authenticated GET on its first node's port."""
    ports = [v.get("port") for v in (rec.get("listeners") or {}).values() if isinstance(v, dict)]
    if not ports:
        return False, "it listens nowhere"
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", int(ports[0]), timeout=timeouts.NVUE_PROBE, context=ctx)
    try:
        auth = base64.b64encode(f"{USER}:{password(d)}".encode()).decode()
        conn.request("GET", "/nvue_v1/revision", headers={"Authorization": f"Basic {auth}",
                                                           "Accept": "application/json"})
        resp = conn.getresponse()
        body = resp.read(1 << 16)
        json.loads(body or b"{}")
        return resp.status == 200, "" if resp.status == 200 else f"HTTP {resp.status}"
    except (OSError, ValueError, http.client.HTTPException) as e:
        return False, f"no answer on 127.0.0.1:{ports[0]}: {e}"
    finally:
        conn.close()


def require(d: Path, lab: str) -> dict:
    """The running service's record; TwinError saying how to start it when it is not running."""
    rec = record(d)
    if rec is None:
        raise TwinError(f"lab {lab!r} has no NVUE service running (its nodes run no NVUE, or it stopped); "
                        f"`twin up` of the lab starts it again")
    return rec


def kernel_plane(lab: str, backend: str, say: Callable[[str], None]) -> tuple[nvue.Layout, bool]:
    """How `twin up` builds the NVUE nodes' kernel planes: their layout, and whether they make bonds."""
    return layout(lab, backend, say), bonds(lab, say)


def bonds(lab: str, say: Callable[[str], None]) -> bool:
    """Whether the lab's NVUE nodes make Linux bonds (`twin.nvue.bonds`): with TWIN_NVUE_BONDS=on, on a
    kernel with bonding; else their bonds are stored with the notice, as without it."""
    if os.environ.get(nvue_bonds.ENV, "") != "on":
        return False
    if not kernel.probe_bonds(lab):
        say(f"{nvue_bonds.ENV}=on: this kernel has no bonding (CONFIG_BONDING); the NVUE nodes' bonds are "
            "stored, not made")
        return False
    return True


def layout(lab: str, backend: str, say: Callable[[str], None]) -> nvue.Layout:
    """The kernel layout of the lab's NVUE nodes: twin's per-VNI one (a bridge and a VXLAN device per
    VNI), or with TWIN_NVUE_LAYOUT=vlan-aware, on a lab of VRF devices (--vrf-backend device) and a
    kernel with 802.1Q VLANs, Cumulus's own (a VLAN-aware br_default, one VXLAN device, SVIs with VRR)."""
    if os.environ.get("TWIN_NVUE_LAYOUT", "") != nvue.VLAN_AWARE:
        return nvue.PER_VNI
    why = ("the lab's tenant VRFs are namespaces (--vrf-backend device for VRF devices)" if backend != "vrf" else
           "this kernel has no 802.1Q VLANs" if not kernel.probe_vlans(lab) else "")
    if why:
        say(f"TWIN_NVUE_LAYOUT=vlan-aware: {why}; the NVUE nodes get the per-VNI layout")
        return nvue.PER_VNI
    return nvue.VLAN_AWARE
