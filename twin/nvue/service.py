"""A lab's NVUE service (`nvued`): what it keeps in the lab directory, its start, its stop
and whether it answers. `twin up` of a lab whose nodes run NVUE starts it (`Lab.up`), `twin
apply` starts it again if it is not running, `twin down` stops it (`cleanup.remove_all`).

In `<lab dir>/_nvue/` ('_': no node has that name), none of it visible to a node:

    service.json      its record: pid, start time, command line, and per FRR node its HTTPS
                      port on 127.0.0.1 and its socket (`daemon`)
    service.log       its stderr: one line per failed request, never a traceback
    password          user `cumulus`'s, for HTTP Basic auth and SSH on the nodes: made per lab (or the
                      topology's mgmt.password), mode 0600, never a default (`twin.lifecycle.mgmtnet`)
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
import ssl
from pathlib import Path

from twin.base import timeouts
from twin.base.errors import TwinError
from twin.config.naming import NVUE_DIR, container_name, nvue_run
from twin.lifecycle import daemon
from twin.lifecycle.mgmtnet import password, write_private
from twin.nvue import client
from twin.topology.model import Bind, Fabric

USER = "cumulus"  # NVUE's user on a Cumulus switch
NVUE_RUN = "/run/nvue"  # the directory of a node's NVUE socket, as bound into the node (read-only)
NV_BIN = "/usr/bin/nv"  # the `nv` command, as bound into an FRR node (read-only), where Cumulus Linux has it
CLIENT = Path(client.__file__)  # the node's `nv` command (a script of the standard library)


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


def certificate(d: Path, lab: str, fabric: Fabric | None = None) -> tuple[Path, Path]:
    """The lab's self-signed certificate and key, made on first use, and again when they do not name
    every node of `fabric` on the management network: its address and its names (`twin-<lab>-<node>`,
    the node's own), besides 127.0.0.1 and localhost."""
    cert, key = root(d) / "cert.pem", root(d) / "key.pem"
    names, addresses = _subjects(fabric)
    if (
        cert.is_file()
        and key.is_file()
        and not cert.is_symlink()
        and not key.is_symlink()
        and _covers(cert, names, addresses)
    ):
        return cert, key
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    k = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"twin lab {lab} NVUE API")])
    now = datetime.datetime.now(datetime.timezone.utc)
    sans = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]
    c = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(k.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(sans), False)
        .sign(k, hashes.SHA256())
    )
    write_private(
        key,
        k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    write_private(cert, c.public_bytes(serialization.Encoding.PEM), 0o644)
    return cert, key


def _subjects(fabric: Fabric | None) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) the certificate must name."""
    names, addresses = ["localhost"], ["127.0.0.1"]
    if fabric is None:
        return names, addresses
    for n in fabric.managed():
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
    for sock in run.glob("*/*.sock") if run.is_dir() and not run.is_symlink() else ():
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
    ports = [v["port"] for v in (rec.get("listeners") or {}).values() if isinstance(v, dict) and v.get("port")]
    if not ports:
        return False, "it listens nowhere"
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    conn = http.client.HTTPSConnection("127.0.0.1", int(ports[0]), timeout=timeouts.NVUE_PROBE, context=ctx)
    try:
        auth = base64.b64encode(f"{USER}:{password(d)}".encode()).decode()
        conn.request(
            "GET", "/nvue_v1/revision", headers={"Authorization": f"Basic {auth}", "Accept": "application/json"}
        )
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
        raise TwinError(
            f"lab {lab!r} has no NVUE service running (its nodes run no NVUE, or it stopped); "
            f"`twin up` of the lab starts it again"
        )
    return rec


def status_doc(d: Path) -> dict:
    """`status`, or what a lab whose nodes run NVUE says when the service left no record."""
    return status(d) or {"running": False, "answers": False, "listeners": {}, "error": "not running (no record)"}


def problem(doc: dict) -> str:
    """Why the service is not healthy, in one line ("": it answers)."""
    return (
        ""
        if doc.get("answers")
        else (
            f"NVUE service: {doc.get('error') or 'not running'} (REST API and `nv` unreachable; `twin apply` of a "
            "change, or `twin up` of the same files, starts it again)"
        )
    )


def line(doc: dict) -> str:
    """Where the service listens and whether it answers: its line of `twin status`."""
    ls = doc.get("listeners") or {}
    ports = ", ".join(f"{n} https://127.0.0.1:{x['port']}" for n, x in ls.items() if isinstance(x, dict))
    state = "[green]answers[/green]" if doc.get("answers") else f"[red]does not answer[/red] ({doc.get('error')})"
    return (
        f"NVUE service{' (pid ' + str(doc['pid']) + ')' if doc.get('pid') else ''}: {state}; REST API "
        f"/nvue_v1 on {ports or 'nothing'}; `nv` in each FRR node over {NVUE_RUN}/nvue.sock"
    )


# --- what the nodes get ------------------------------------------------------------------------------
def nv_client(labdir: Path) -> Path:
    """The `nv` command FRR nodes get (`twin.nvue.client`), copied into the lab directory where no node
    can write (each node sees it read-only at NV_BIN); written before the nodes start, once."""
    f = labdir / NVUE_DIR / "nv"
    f.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # the service's password, sockets: the owner's only
    text = CLIENT.read_text()
    if not f.is_file() or f.is_symlink() or f.read_text() != text:
        write_private(f, text.encode(), 0o755)
    return f


def binds(labdir: Path, node: str) -> list[Bind]:
    """An FRR node's NVUE binds, read-only: the directory of its socket at NVUE_RUN (a directory, so the
    lab's NVUE service can come and go) and the `nv` command at NV_BIN."""
    run = nvue_run(labdir, node)
    run.mkdir(parents=True, exist_ok=True)
    return [
        Bind(source=str(run.resolve()), target=NVUE_RUN, read_only=True),
        Bind(source=str((labdir / NVUE_DIR / "nv").resolve()), target=NV_BIN, read_only=True),
    ]
