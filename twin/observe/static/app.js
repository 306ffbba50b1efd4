// twin web: the fabric drawn from /api/topology, coloured from the collector's state (SSE /api/stream).
"use strict";
const SVG = "http://www.w3.org/2000/svg";
const TENANT_COLOURS = ["#e4572e", "#3c7dd9", "#2ca58d", "#f2a541", "#9b5de5", "#e15a97", "#6a994e", "#8d99ae"];
const KIND_FILL = { spine: "#dfe7fd", leaf: "#e2f0cb", dpu: "#fde2c8", host: "#ffffff" };
let topo = null, state = null, selected = null, tenantColour = {}, hostTenant = {}, verifyDoc = null, vteps = new Set();

function el(tag, attrs, parent, ns) {
  const e = ns ? document.createElementNS(SVG, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}
function text(s) { return document.createTextNode(String(s)); }
function clock(t) { const d = new Date(t * 1000); return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0"); }

function layout() {
  // rows by tier (spines, leafs, DPUs, hosts); hosts ordered by the VTEP they hang off
  const svg = document.getElementById("fabric");
  const width = svg.clientWidth || 900, rows = {}, pos = {};
  const order = {};
  topo.links.forEach(l => { order[l.a.node] = order[l.a.node] || l.b.node; order[l.b.node] = order[l.b.node] || l.a.node; });
  topo.nodes.forEach(n => (rows[n.tier] = rows[n.tier] || []).push(n));
  const tiers = Object.keys(rows).map(Number).sort((a, b) => a - b);
  const rowGap = 400 / Math.max(1, tiers.length);
  tiers.forEach((tier, i) => {
    const row = rows[tier];
    if (row[0].kind === "host") row.sort((a, b) => (order[a.name] + a.name).localeCompare(order[b.name] + b.name));
    row.forEach((n, j) => { pos[n.name] = { x: width * (j + 0.5) / row.length, y: 30 + rowGap * i + rowGap / 4 }; });
  });
  return pos;
}

function draw() {
  const svg = document.getElementById("fabric");
  svg.innerHTML = "";
  const pos = layout();
  const links = el("g", { id: "links" }, svg, true), nodes = el("g", { id: "nodes" }, svg, true);
  topo.links.forEach(l => {
    const a = pos[l.a.node], b = pos[l.b.node];
    const line = el("line", { class: "link", id: "link-" + l.id, "data-a": l.a.node + ":" + l.a.port,
      "data-b": l.b.node + ":" + l.b.port, "data-state": "unknown", x1: a.x, y1: a.y, x2: b.x, y2: b.y }, links, true);
    el("title", {}, line, true).appendChild(text(`${l.a.node}:${l.a.port} — ${l.b.node}:${l.b.port}`));
  });
  topo.nodes.forEach(n => {
    const p = pos[n.name], w = n.kind === "host" ? 58 : 70;
    const g = el("g", { class: "node", id: "node-" + n.name, "data-node": n.name, "data-kind": n.kind,
      "data-state": "unknown", transform: `translate(${p.x - w / 2},${p.y - 14})` }, nodes, true);
    const fill = n.kind === "host" && hostTenant[n.name] ? tenantColour[hostTenant[n.name]] + "55" : KIND_FILL[n.kind] || "#fff";
    el("rect", { width: w, height: 28, fill: fill }, g, true);
    el("text", { x: w / 2, y: 18 }, g, true).appendChild(text(n.name));
    g.addEventListener("click", () => { selected = n.name; render(); });
  });
  const legend = document.getElementById("legend");
  legend.innerHTML = "";
  Object.keys(tenantColour).forEach(t => {
    const s = el("span", {}, legend); el("i", { style: `background:${tenantColour[t]}` }, s); s.appendChild(text("tenant " + t));
  });
  [["#1f8b4c", "link up"], ["#d62828", "link down"], ["#9aa3ad", "unknown"]].forEach(([c, label]) => {
    const s = el("span", {}, legend); el("i", { style: `background:${c}` }, s); s.appendChild(text(label));
  });
}

function portUp(node, port) {
  const p = state && state.snapshot && (state.snapshot.ports[node] || {})[port];
  return p ? p.oper === "up" : null;
}

function tenantNodes(t) {
  if (!t) return null;
  const info = topo.tenants[t];
  return new Set([...info.hosts, ...info.vteps]);
}

function colour() {
  const only = tenantNodes(document.getElementById("tenant").value);
  document.querySelectorAll(".link").forEach(line => {
    const [an, ap] = line.dataset.a.split(":"), [bn, bp] = line.dataset.b.split(":");
    const a = portUp(an, ap), b = portUp(bn, bp);
    line.dataset.state = a === null && b === null ? "unknown" : (a === false || b === false ? "down" : "up");
    line.classList.toggle("dim", !!only && !only.has(an) && !only.has(bn));
  });
  document.querySelectorAll(".node").forEach(g => {
    const n = g.dataset.node, st = state && state.snapshot ? state.snapshot.nodes[n] : null;
    g.dataset.state = st === "running" ? "up" : (st ? "down" : "unknown");
    g.classList.toggle("selected", n === selected);
    g.classList.toggle("dim", !!only && !only.has(n) && (g.dataset.kind === "host" || vteps.has(n)));
  });
}

function table(parent, heads, rows, numeric) {
  const t = el("table", {}, parent), tr = el("tr", {}, el("thead", {}, t));
  heads.forEach(h => el("th", {}, tr).appendChild(text(h)));
  const body = el("tbody", {}, t);
  rows.forEach(r => {
    const row = el("tr", {}, body);
    r.forEach((v, i) => {
      const td = el("td", { class: (numeric || []).includes(i) ? "num" : "" }, row);
      if (v && typeof v === "object") { td.className = v.cls; td.appendChild(text(v.text)); } else td.appendChild(text(v));
    });
  });
  return t;
}

function detail() {
  const d = document.getElementById("detail");
  if (!selected || !state || !state.snapshot) return;
  const s = state.snapshot, node = topo.nodes.find(n => n.name === selected);
  d.innerHTML = "";
  el("h2", {}, d).appendChild(text(`${selected} (${node.kind}${node.asn ? ", AS " + node.asn : ""}) — ${s.nodes[selected] || "?"}`));
  const sessions = Object.entries(s.sessions[selected] || {});
  if (sessions.length) {
    el("h3", {}, d).appendChild(text("BGP sessions"));
    table(d, ["session", "peer", "state", "prefixes"], sessions.map(([k, v]) =>
      [k, v.peer, { text: v.state, cls: v.up ? "ok" : "bad" }, v.prefixes]), [3]);
  }
  const vnis = Object.entries(s.vnis[selected] || {});
  if (vnis.length) {
    el("h3", {}, d).appendChild(text("VNIs"));
    table(d, ["vni", "type", "tenant", "MACs", "t2", "t3", "t5", "remote VTEPs"], vnis.map(([k, v]) =>
      [k, v.type, v.tenant, v.macs, v.type2, v.type3, v.type5, v.remote_vteps === null ? "-" : v.remote_vteps]), [3, 4, 5, 6, 7]);
  }
  const rates = (state.rates || {})[selected] || {}, roce = s.roce[selected] || {};
  el("h3", {}, d).appendChild(text("ports"));
  table(d, ["port", "link", "rx pkts", "tx pkts", "rx pps", "tx pps", "drops", "RoCE rx", "RoCE tx", "CE rx", "CNP rx/tx"],
    Object.entries(s.ports[selected] || {}).sort().map(([p, v]) => {
      const r = rates[p] || {}, q = roce[p] || {};
      return [p, { text: v.oper, cls: v.oper === "up" ? "ok" : "bad" }, v.rx_packets, v.tx_packets,
        Math.round(r.rx_packets || 0), Math.round(r.tx_packets || 0), v.rx_dropped + v.tx_dropped,
        q.rx_packets || 0, q.tx_packets || 0, q.rx_ce || 0, `${q.cnp_rx || 0}/${q.cnp_tx || 0}`];
    }), [2, 3, 4, 5, 6, 7, 8, 9]);
  const routes = Object.entries(s.routes[selected] || {});
  if (routes.length) {
    el("h3", {}, d).appendChild(text("routes per VRF"));
    table(d, ["VRF", "IPv4 routes"], routes.map(([v, p]) => [v, p.length]), [1]);
  }
  const events = (state.events || []).filter(e => e.node === selected).slice(-15).reverse();
  el("h3", {}, d).appendChild(text("events"));
  const ol = el("ol", { class: "events" }, d);
  events.forEach(e => el("li", { class: "k-" + e.kind }, ol).appendChild(text(`${clock(e.time)} ${e.text}`)));
  if (!events.length) el("li", { class: "hint" }, ol).appendChild(text("none recorded"));
}

function timeline() {
  const events = (state.events || []).slice().reverse();
  const ol = document.getElementById("timeline");
  ol.innerHTML = "";
  events.slice(0, 80).forEach(e => el("li", { class: "k-" + e.kind, "data-kind": e.kind }, ol)
    .appendChild(text(`${clock(e.time)}  ${e.kind.padEnd(10)} ${e.text}`)));
  const strip = document.getElementById("strip"), w = strip.clientWidth || 900, now = state.snapshot.time, span = 600;
  strip.innerHTML = "";
  el("line", { x1: 0, y1: 14, x2: w, y2: 14, stroke: "#ccc" }, strip, true);
  events.filter(e => now - e.time < span).forEach(e => {
    const c = el("circle", { cx: w * (1 - (now - e.time) / span), cy: 14, r: 4, class: "k-" + e.kind, fill: "currentColor" }, strip, true);
    el("title", {}, c, true).appendChild(text(`${clock(e.time)} ${e.text}`));
  });
  el("text", { x: 2, y: 27, "font-size": 9, fill: "#888" }, strip, true).appendChild(text("-10 min"));
}

function verify() {
  const v = verifyDoc, box = document.getElementById("verify");
  if (!v) return;
  box.innerHTML = "";
  const failed = (v.checks || []).filter(c => !c.passed);
  el("p", { class: v.passed ? "ok" : "bad" }, box).appendChild(text(
    `${v.passed ? "passed" : "FAILED"}: ${(v.checks || []).length} checks, ${failed.length} failed, at ${clock(v.time)}`));
  const iso = v.isolation || (v.extra || {}).isolation;
  if (iso) {
    el("h3", {}, box).appendChild(text("isolation matrix (rows send, columns receive)"));
    table(box, ["from \\ to", ...iso.hosts.map(h => `${h} (${iso.tenants[h]})`)], iso.hosts.map(s =>
      [`${s} (${iso.tenants[s]})`, ...iso.hosts.map(d => s === d ? "" :
        { text: iso.matrix[s][d] === "blocked" ? "-" : iso.matrix[s][d], cls: ["ok", "blocked"].includes(iso.matrix[s][d]) ? "ok" : "bad" })]));
  }
  failed.slice(0, 20).forEach(c => el("p", { class: "bad" }, box).appendChild(text(`${c.group}: ${c.name}: ${c.message}`)));
}

function render() {
  if (!topo || !state || !state.snapshot) return;
  const s = state.snapshot, running = Object.values(s.nodes).filter(x => x === "running").length;
  colour(); detail(); timeline();
  document.getElementById("summary").textContent =
    `${running}/${Object.keys(s.nodes).length} nodes running, ${topo.links.length} links (${document.querySelectorAll('.link[data-state="down"]').length} down), sampled ${clock(s.time)}`;
}

async function start() {
  topo = await (await fetch("/api/topology")).json();
  document.getElementById("lab").textContent = topo.lab;
  const sel = document.getElementById("tenant");
  Object.keys(topo.tenants).forEach((t, i) => {
    tenantColour[t] = TENANT_COLOURS[i % TENANT_COLOURS.length];
    topo.tenants[t].hosts.forEach(h => hostTenant[h] = t);
    topo.tenants[t].vteps.forEach(v => vteps.add(v));
    el("option", { value: t }, sel).appendChild(text(t));
  });
  sel.addEventListener("change", render);
  draw();
  state = await (await fetch("/api/state")).json();
  verifyDoc = await (await fetch("/api/verify")).json();
  render(); verify();
  const live = document.getElementById("live"), es = new EventSource("/api/stream");
  es.addEventListener("state", m => { state = JSON.parse(m.data); live.textContent = "live"; live.classList.add("on"); render(); });
  es.onerror = () => { live.textContent = "reconnecting"; live.classList.remove("on"); };
  setInterval(async () => { verifyDoc = await (await fetch("/api/verify")).json(); verify(); }, 10000);
  window.addEventListener("resize", () => { draw(); render(); });
}
start();
