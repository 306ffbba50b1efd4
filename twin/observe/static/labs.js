// The twin server's page: the user's labs with their expiry, and each lab's own page (#lab=NAME):
// its status against its intent, its operations and its events. Reads the API with the page's cookie.
"use strict";

const $ = (id) => document.getElementById(id);
const text = (s) => document.createTextNode(s == null ? "" : String(s));

function cell(row, value, cls) {
  const td = row.insertCell();
  if (value instanceof Node) td.appendChild(value); else td.appendChild(text(value));
  if (cls) td.className = cls;
  return td;
}

function when(t) { return t ? new Date(t * 1000).toLocaleString() : ""; }

function left(seconds) {
  if (seconds <= 0) return "expired";
  const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60);
  return h ? `in ${h} h ${m} min` : `in ${m} min`;
}

function mib(bytes) { return `${Math.round(bytes / 1048576)} MiB`; }

async function get(path) {
  const r = await fetch(path, {credentials: "same-origin", headers: {Accept: "application/json"}});
  if (r.status === 401) { show("signin"); throw new Error("not signed in"); }
  const doc = await r.json();
  if (!r.ok) throw new Error(doc.detail || r.statusText);
  return doc;
}

function show(which) {
  for (const p of ["signin", "labs-pane", "lab-pane"]) $(p).hidden = p !== which;
  $("logout").hidden = which === "signin";
}

async function labs() {
  const doc = await get("/v1/labs");
  $("who").textContent = doc.user;
  const body = $("labs").tBodies[0];
  body.replaceChildren();
  for (const lab of doc.labs) {
    const row = body.insertRow(), a = document.createElement("a");
    a.href = `#lab=${encodeURIComponent(lab.name)}`;
    a.textContent = lab.name;
    cell(row, a);
    cell(row, lab.state, lab.state === "up" ? "ok" : lab.state === "failed" ? "bad" : "");
    cell(row, lab.frr_nodes, "num");
    cell(row, mib(lab.memory), "num");
    cell(row, when(lab.created));
    cell(row, `${when(lab.expires)} (${left(lab.expires_in)})`, lab.expires_in < 900 ? "bad" : "");
  }
  if (!doc.labs.length) cell(body.insertRow(), "no labs: POST /v1/labs, or twin --server URL up TOPOLOGY").colSpan = 7;
  const l = doc.limits;
  $("summary").textContent = `${doc.labs.length} lab(s)`;
  $("limits").textContent = `your limits: ${l.labs ?? "no limit"} labs, ${l.frr_nodes ?? "no limit"} FRR nodes, ` +
    `${l.memory == null ? "no limit" : mib(l.memory)} memory`;
  show("labs-pane");
}

function statusTable(st) {
  const t = document.createElement("table"), head = t.createTHead().insertRow();
  for (const c of ["node", "kind", "state", "asn", "loopback", "sessions up/expected"]) {
    const th = document.createElement("th"); th.textContent = c; head.appendChild(th);
  }
  const body = t.createTBody();
  for (const n of st.nodes || []) {
    const row = body.insertRow();
    cell(row, n.node); cell(row, n.kind); cell(row, n.state, n.state === "running" ? "ok" : "bad");
    cell(row, n.asn || ""); cell(row, n.loopback || "");
    cell(row, n.sessions_expected == null ? "" : `${n.sessions_up ?? "?"}/${n.sessions_expected}`,
         n.sessions_up !== n.sessions_expected ? "bad" : "");
  }
  const p = document.createElement("p");
  p.className = st.healthy ? "ok" : "bad";
  p.textContent = st.healthy ? "healthy: the lab holds its intent" : `NOT healthy: ${(st.missing || []).length} missing`;
  const wrap = document.createElement("div");
  wrap.append(t, p);
  return wrap;
}

async function lab(name) {
  const doc = await get(`/v1/labs/${encodeURIComponent(name)}`);
  $("lab-name").textContent = doc.name;
  $("lab-state").textContent = doc.state;
  $("lab-state").className = doc.state === "up" ? "ok" : "bad";
  $("lab-expiry").textContent = `owner ${doc.owner}; created ${when(doc.created)}; expires ${when(doc.expires)} ` +
    `(${left(doc.expires_in)}); PATCH /v1/labs/${doc.name} {"expires_in": "4h"} extends it`;
  $("lab-status").replaceChildren(doc.status ? statusTable(doc.status) : text("no status: the lab is not up"));
  const ops = $("lab-ops").tBodies[0];
  ops.replaceChildren();
  for (const op of doc.operations) {
    const row = ops.insertRow();
    cell(row, op.id); cell(row, op.kind);
    cell(row, op.state, op.state === "failed" ? "bad" : op.state === "succeeded" ? "ok" : "");
    cell(row, when(op.started)); cell(row, op.exit ?? "");
    cell(row, op.error ? op.error.detail : op.progress);
  }
  const list = $("lab-events");
  list.replaceChildren();
  if (doc.state === "up") {
    const ev = await get(`/v1/labs/${encodeURIComponent(name)}/events?since=3600&limit=200`);
    for (const e of ev.events.slice(-200).reverse()) {
      const li = document.createElement("li");
      li.className = `k-${e.kind}`;
      li.textContent = `${new Date(e.time * 1000).toLocaleTimeString()} ${e.kind} ${e.node || ""} ${e.text || ""}`;
      list.appendChild(li);
    }
  }
  show("lab-pane");
}

async function route() {
  const m = location.hash.match(/^#lab=(.+)$/);
  try {
    if (m) await lab(decodeURIComponent(m[1])); else await labs();
  } catch (e) {
    if (e.message !== "not signed in") $("summary").textContent = `error: ${e.message}`;
  }
}

$("signin-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const r = await fetch("/session", {method: "POST", credentials: "same-origin",
                                     headers: {"Content-Type": "application/json"},
                                     body: JSON.stringify({token: $("token").value})});
  $("token").value = "";
  if (r.ok) { $("signin-error").textContent = ""; route(); }
  else $("signin-error").textContent = (await r.json()).detail;
});
$("logout").addEventListener("click", async () => {
  await fetch("/session", {method: "DELETE", credentials: "same-origin"});
  show("signin");
});
window.addEventListener("hashchange", route);
route();
setInterval(route, 10000);
