"""NVUE's `--prove` elements of the kernel half it runs (issue 44): its ACLs, its RoCE QoS and its
`link.mtu`, each broken on the live node, named by the verify group that judges it (`acl`, `qos`,
`mtu`), and put back as twin's plane applies it (the plane's own step: the ACL file loaded again,
the port's tc batch run again, the MTU set again).

- each ACL table (`acl-table NODE NS`: `table netdev twin_acl` of the ports, bonds and SVIs bound in a
  namespace; `acl-table NODE NS control-plane`: `table inet twin_acl` of the control plane's bindings
  there): deleted, named "not loaded" by `acl: NODE NS [control-plane]`;
- each deny rule of each binding (`acl-rule NODE PLACE WAY ACL SEQ`, PLACE a port, bond or SVI, or
  `control-plane[/NS]`, or `PORT control-plane`): the rule replaced by the same rule accepting (its match
  and counter kept), named "does not run" by its own check; a permit rule is exempt (the group judges what
  an ACL cuts);
- each DSCP verify sends (`qos-dscp NODE 26`: RoCE, `48`: CNPs) of a node whose RoCE and CNP frames
  the group counts: its filter taken off every fabric port (`tc filter del ... prio P`: the frames fall
  to class 0), named by `qos: NODE RoCE class` / `CNP class`; the DSCP map of host ports, DSCPs
  verify does not send, ECN marking are exempt, with why;
- each cabled port NVUE gives a `link.mtu` (`link-mtu NODE PORT`): set below what its link must carry,
  named by the `mtu` group's check of that link; an SVI's is exempt (the group judges links).
"""

from __future__ import annotations

import re
from dataclasses import replace

from twin.config.steps import Step
from twin.lifecycle.context import LabContext
from twin.nvue import kernelcheck, kernelplane, qoscheck
from twin.nvue import mtu as nvue_mtu
from twin.nvue.acl import NETDEV, TABLE
from twin.nvue.configs import NvueNode
from twin.nvue.qos import ENV, Qos, prio
from twin.nvue.qoscheck import SENT
from twin.prove.element import Element, Exempt, Kernel, NftRule
from twin.prove.kernel_side import SMALL_MTU
from twin.verify import mtu as verify_mtu


def elements(ctx: LabContext, nvue: dict[str, NvueNode]) -> tuple[list[Element], list[Exempt]]:
    """The ACL, QoS and MTU elements of the NVUE nodes `nvue` (as they run), and what is exempt."""
    out: list[Element] = []
    exempt: list[Exempt] = []
    for derive in (_acls, _qos, _mtus):
        for node, x in sorted(nvue.items()):
            els, ex = derive(ctx, node, x)
            out += els
            exempt += ex
    return out, exempt


def _acls(ctx: LabContext, node: str, x: NvueNode) -> tuple[list[Element], list[Exempt]]:
    acls, out, exempt = x.plane.acls, [], []
    for family, ns in acls.tables():
        places = sorted({b.place for b in acls.bindings if b.ns == ns and b.family == family})
        check = kernelcheck.table_name(node, family, ns)
        out.append(
            Element(
                f"acl-table {check}",
                "ACL table",
                node,
                f"table {family} {TABLE} of {node}'s ACLs on {', '.join(places)}"
                + (f" (namespace {ns})" if ns else ""),
                (kernelcheck.GROUP,),
                (rf"^{kernelcheck.GROUP}: {re.escape(check)}: the (control-plane )?ACLs of \S+ are not loaded",),
                (Kernel(node, (Step("nft-delete", f"{family} {TABLE}", ns),)),),
                (Kernel(node, (x.plane.extras[_key(family, ns)],)),),
            )
        )
    for b in acls.bindings:
        load = Kernel(node, (x.plane.extras[_key(b.family, b.ns)],))
        for r in acls.acls[b.acl].rules:
            at = f"{node} {b.place} {b.way} {b.acl} {r.seq}"
            if not r.drops:
                exempt.append(
                    Exempt(
                        "ACL permit rule",
                        at,
                        "verify's acl group judges what an ACL denies; a permit rule cuts nothing",
                    )
                )
                continue
            comment = f"acl {b.acl} rule {r.seq}"
            out.append(
                Element(
                    f"acl-rule {at}",
                    "ACL deny rule",
                    node,
                    f"{comment} (deny) {b.way} on {node} {b.place}",
                    (kernelcheck.GROUP,),
                    (rf"^{kernelcheck.GROUP}: {re.escape(f'{node} {b.place} {b.way} {comment}')}: does not run",),
                    (
                        NftRule(
                            node,
                            b.ns,
                            comment,
                            f"{b.family} {TABLE}",
                            b.chain,
                            replace(r, action="permit").nft(b.acl, b.counter(r.seq), b.family),
                        ),
                    ),
                    (load,),
                )
            )
    return out, exempt


def _key(family: str, ns: str) -> tuple[str, str]:
    """The plane extra of a table's file (`twin.nvue.aclbind.Acls.steps`)."""
    return ("acl" if family == NETDEV else "acl-cp", ns)


def _qos(ctx: LabContext, node: str, x: NvueNode) -> tuple[list[Element], list[Exempt]]:
    q, plane = x.plane.qos, x.plane
    if not isinstance(q, Qos):
        return [], []
    ports = qoscheck.qos_ports(ctx.fabric, node, plane)
    hosts = sorted(k[1] for k in plane.extras if k[0] == "qos" and k[1] not in ports)
    exempt = []
    if q.ecn:
        exempt.append(
            Exempt(
                "QoS ECN marking",
                f"{node} traffic class {', '.join(map(str, sorted(q.ecn)))}",
                "verify's qos group counts frames by class, not CE marks"
                + ("" if kernelplane.recorded(ctx.dir).red else f"; and here kept, not run (no RED qdisc: {ENV})"),
            )
        )
    if hosts:
        exempt.append(
            Exempt(
                "QoS DSCP map",
                f"{node} {', '.join(hosts)}",
                "ports towards hosts: the qos group counts RoCE by class where it leaves for other VTEPs",
            )
        )
    if not ports or qoscheck.qos_pair(ctx.fabric, node) is None:
        why = "no fabric port" if not ports else "no host of its own with a peer behind another VTEP"
        return [], exempt + [Exempt("QoS DSCP map", node, f"{why}: the qos group sends no RoCE from it")]
    out = []
    for dscp, tc in sorted(q.classes.items()):
        if dscp not in SENT:
            exempt.append(
                Exempt(
                    "QoS DSCP map",
                    f"{node} DSCP {dscp}",
                    f"verify sends {' and '.join(f'{w} (DSCP {d})' for d, w in SENT.items())} only",
                )
            )
        elif tc == 0:
            exempt.append(
                Exempt("QoS DSCP map", f"{node} DSCP {dscp}", "in traffic class 0, where it goes without a filter too")
            )
        else:
            out.append(
                Element(
                    f"qos-dscp {node} {dscp}",
                    "QoS DSCP map",
                    node,
                    f"DSCP {dscp} ({SENT[dscp]}) to traffic class {tc} on {', '.join(ports)} of {node}",
                    (qoscheck.QOS,),
                    (rf"^{qoscheck.QOS}: {re.escape(node)} {SENT[dscp]} class: .* did not leave ",),
                    (
                        Kernel(
                            node,
                            tuple(
                                Step("nofilter", p, ns, {"parent": "1:", "prio": prio(dscp)}) for p, ns in ports.items()
                            ),
                        ),
                    ),
                    (Kernel(node, tuple(plane.extras[("qos", p)] for p in ports)),),
                )
            )
    return out, exempt


def _mtus(ctx: LabContext, node: str, x: NvueNode) -> tuple[list[Element], list[Exempt]]:
    plane, need, out, exempt = x.plane, verify_mtu.needs(ctx.fabric), [], []
    names = {d: n for n, (_, d) in nvue_mtu.places(plane, ctx.backend).items()}
    for key, s in sorted(plane.extras.items()):
        if key[0] != "mtu":
            continue
        dev = key[1]
        name = names.get(dev, dev)
        if (node, dev) not in need:
            exempt.append(
                Exempt(
                    "NVUE link MTU",
                    f"{node} {name}",
                    "not an end of a link of the topology (an SVI, a port no cable reaches): verify's mtu group "
                    "judges links",
                )
            )
            continue
        want, why = need[(node, dev)]
        low = min(SMALL_MTU, want - 1)
        out.append(
            Element(
                f"link-mtu {node} {dev}",
                "NVUE link MTU",
                node,
                f"link.mtu {s.args['mtu']} of {name} on {node} (its link must carry {want}: {why})",
                (verify_mtu.GROUP,),
                (rf"^{verify_mtu.GROUP}: \S+ - \S+: (.*; )?{re.escape(node)} {re.escape(dev)} mtu {low} < ",),
                (Kernel(node, (Step("mtu", dev, s.ns, {"mtu": low}),)),),
                (Kernel(node, (s,)),),
            )
        )
    return out, exempt
