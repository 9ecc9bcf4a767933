// asmevo dashboard: fetches JSON from the server, redraws when the archive's token changes.
//
// Every value shown comes from an archive or a served folder, which may be crafted: the
// DOM is built with h() below, which sets properties and appends text nodes, never HTML.
// Nothing here assigns innerHTML or outerHTML, or calls insertAdjacentHTML or
// document.write (tests/serve/test_app.py checks this file for them). Plotly renders a
// few tags in its own strings, so text handed to Plotly goes through plotlyText().
"use strict";

const POLL_MS = 2000;
const STATUSES = ["equal", "mismatch", "nondeterministic", "fault", "timeout", "crash", "worker-died",
  "unsupported", "hazard", "waitcnt", "abi", "build", "unsafe", "invalid"];
const state = { run: null, token: null, selected: null, order: "best", offset: 0 };

const $ = (id) => document.getElementById(id);
// plotly.min.js loads beside this script (async): the tables do not wait for it
const plotlyReady = new Promise((resolve) => {
  if (window.Plotly) resolve();
  else $("plotly-script").addEventListener("load", resolve);
});

// An element: props are assigned as properties (className, dataset entries, onclick,
// hidden, ...); children are nodes, strings (as text nodes), arrays of them, or null.
function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style") Object.assign(el.style, v);
    else el[k] = v;
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const fill = (el, ...children) => { el.replaceChildren(); return append(el, children); };
const fmt = (v, d = 4) => (v === null || v === undefined ? "–" : typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(d)) : String(v));
const statusClass = (s) => "status-" + (STATUSES.includes(s) ? s : "other");
// Plotly reads <b>, <a href>, <br> ... in its strings and decodes entities: text for it is escaped
const plotlyText = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";");
const api = (path) => "/api" + path + (path.includes("?") ? "&" : "?") + "run=" + encodeURIComponent(state.run);

async function getJSON(url) {
  const r = await fetch(url, { cache: "no-store" });
  const body = await r.json();
  if (!r.ok || body.error) throw new Error(body.error || r.statusText);
  return body;
}

function showError(err) {
  const box = $("error");
  if (err) { box.textContent = String(err.message || err); box.hidden = false; }
  else box.hidden = true;
}

// cols: [key, heading, optional render(value, row) -> node or string]
function table(el, rows, cols, onClick) {
  const head = h("tr", null, cols.map((c) => h("th", null, c[1])));
  const body = rows.map((r, i) => h("tr", { className: onClick ? "clickable" : "", dataset: { i: String(i) },
    onclick: onClick ? () => onClick(r) : null },
  cols.map((c) => h("td", { className: c[0] === "status" ? statusClass(r.status) : "" },
    c[2] ? c[2](r[c[0]], r) : fmt(r[c[0]])))));
  fill(el, head, body.length ? body : h("tr", null, h("td", { colSpan: cols.length }, "(none)")));
}

function card(title, ...value) { return h("div", { className: "card" }, title, h("b", null, value)); }

function drawSummary(s) {
  const best = s.best ? [fmt(s.best.speedup) + "x ", h("small", null, "(", s.best.label, ")")] : "none yet";
  const left = Object.entries(s.budget_left).filter(([, v]) => v !== null).map(([k, v]) => `${k} ${fmt(v, 1)}`).join(", ") || "no limits";
  fill($("cards"), card("run", s.name, " ", h("small", null, s.kernel)),
    card("status", s.status, " ", h("small", null, s.stop_reason)),
    card("generation", `${fmt(s.generation)} / ${fmt(s.generations)}`), card("evaluations", fmt(s.evaluations)),
    card("best speedup", best), card("budget left", left), card("device", s.device, " ", h("small", null, s.timing)));
  table($("islands"), s.islands, [["island", "island"], ["evaluations", "evals"], ["accepted", "accepted"],
    ["acceptance", "acceptance", (v) => fmt(v, 2)], ["best", "best"], ["evals_per_minute", "evals/min", (v) => fmt(v, 1)]]);
}

async function drawCurves(c, label) {
  await plotlyReady;
  const traces = c.series.map((s) => ({ x: s.evaluations, y: s.best, name: plotlyText("island " + s.island), mode: "lines", line: { shape: "hv" } }));
  const layout = { margin: { t: 10, r: 10, b: 40, l: 50 }, xaxis: { title: { text: "evaluations" } },
    yaxis: { title: { text: plotlyText(`best speedup over K0 (${label ?? ""})`) } }, legend: { orientation: "h" } };
  Plotly.react($("island-curve"), traces, layout, { displayModeBar: false, responsive: true });
}

function drawOperators(o) {
  table($("operators"), o.operators, [["operator", "operator"], ["kind", "kind"], ["proposals", "proposals"], ["edits", "edits"],
    ["accepted", "accepted"], ["improved", "improved"], ["best_speedup", "best"]]);
  table($("llm"), o.llm_spend, [["operator", "operator"], ["calls", "calls"], ["tokens_in", "tokens in"], ["tokens_out", "tokens out"],
    ["cost", "$", (v) => fmt(v, 4)], ["improvements", "improvements"], ["cost_per_improvement", "$ / improvement", (v) => fmt(v, 4)]]);
  table($("conversations"), o.conversations || [], [["generation", "gen"], ["slot", "slot"], ["operator", "operator"],
    ["turns", "turns"], ["tries", "tries"], ["tries_equal", "equal"], ["best_try", "best try", (v) => fmt(v, 3)],
    ["cost", "$", (v) => fmt(v, 4)], ["status", "outcome"], ["fitness", "speedup", (v) => fmt(v, 3)]]);
}

function drawLineage(l) {
  const el = $("lineage");
  if (!l.root) { fill(el, h("p", { className: "hint" }, "no accepted individual yet")); return; }
  const seen = new Set();
  const pick = (id) => h("span", { dataset: { ind: id }, onclick: () => select(id) }, id);
  const node = (id) => {
    const n = l.nodes[id];
    if (!n) return h("li", null, id, " (not shown)");
    if (seen.has(id)) return h("li", null, pick(id), " (above)");
    seen.add(id);
    const kids = n.parents.map(node);
    const span = pick(id);
    span.className = statusClass(n.status);
    return h("li", null, span, " ", h("small", null, `${fmt(n.operator)} · ${fmt(n.status)} · ${fmt(n.speedup)}x`),
      h("br"), h("small", null, n.edit_summary), kids.length ? h("ul", null, kids) : null);
  };
  fill(el, h("ul", null, node(l.root)), l.truncated ? h("p", { className: "hint" }, "(truncated)") : null);
}

function drawIndividuals(page) {
  state.offset = page.offset;
  const last = Math.min(page.offset + page.rows.length, page.total);
  fill($("individuals-page"), page.total ? `${page.offset + 1}–${last} of ${page.total}` : "none");
  $("individuals-prev").disabled = page.offset === 0;
  $("individuals-next").disabled = last >= page.total;
  table($("individuals"), page.rows, [["ind_id", "id"], ["generation", "gen"], ["island", "isl"], ["operator", "operator"],
    ["status", "verdict"], ["fitness", "speedup"], ["edit_summary", "edit"]], (r) => select(r.ind_id));
}

async function loadIndividuals() {
  const q = `/individuals?order=${state.order}&offset=${state.offset}`;
  drawIndividuals(await getJSON(api(q)));
}

function edit(raw, open) {
  const e = raw && typeof raw === "object" ? raw : {};
  const where = `${fmt(e.function)}[${fmt(e.start)}:${fmt(e.end)}] ${e.note ?? ""}`;
  const lines = Array.isArray(e.lines) ? e.lines.map(String).join("\n") : fmt(e.lines);
  return h("details", { open }, h("summary", null, where), h("pre", null, lines));
}

async function select(indId) {
  state.selected = indId;
  $("detail-id").textContent = indId;
  try {
    const d = await getJSON(api("/individual/" + encodeURIComponent(indId)));
    const v = d.verdict;
    fill($("detail"), h("p", null, h("b", { className: statusClass(v.status) }, v.status), " ", v.reason),
      h("p", null, `operator ${fmt(d.operator)}, generation ${fmt(d.generation)}, island ${fmt(d.island)}, ` +
        `parents ${d.parents.join(", ") || "–"}; speedup ${fmt(d.speedup)} ${d.label ?? ""}`),
      h("h3", null, "Verdict in full"),
      h("table", { id: "verdict" }, Object.entries(v.details).map(([k, x]) => h("tr", null, h("th", null, k),
        h("td", null, h("pre", null, JSON.stringify(x)))))),
      h("h3", null, "Edits"), d.edits.map((e, n) => [h("span", null, `${n + 1}. `), edit(e, n === d.edits.length - 1)]));
  } catch (err) {
    fill($("detail"), h("div", { className: "error" }, err.message));
  }
  try {
    drawDiff(await getJSON(api("/diff/" + encodeURIComponent(indId))));
  } catch (err) {          // the listing could not be made: said there, the verdict stays
    fill($("diff-summary"), h("div", { className: "error" }, err.message));
    fill($("diff"));
    $("abi").textContent = "";
  }
}

function shade(share) {
  return typeof share === "number" && share > 0 ? { background: `rgba(255, 80, 0, ${Math.min(0.6, 0.08 + share)})` } : {};
}

function drawDiff(d) {
  $("diff-summary").textContent = `kernel ${d.kernel}: ${d.changed_rows} changed rows; shading = share of modeled time of the hot window`;
  fill($("diff"), h("tr", null, h("th", null, "#"), h("th", null, "K0"), h("th", null, "#"), h("th", null, d.ind_id)),
    d.rows.map(([tag, li, lt, ls, ri, rt, rs]) => h("tr", { className: tag },
      h("td", { className: "idx" }, li ?? ""), h("td", { className: "code left", style: shade(ls) }, lt),
      h("td", { className: "idx" }, ri ?? ""), h("td", { className: "code right", style: shade(rs) }, rt))));
  $("abi").textContent = JSON.stringify(d.abi, null, 1);
}

function drawAblation(ab) {
  $("ablation").hidden = false;
  fill($("ablation-tables"), Object.entries(ab.tables).map(([name, rows]) => {
    const cols = rows.length ? Object.keys(rows[0]) : [];
    const head = h("tr", null, cols.map((c) => h("th", null, c)));
    const body = rows.map((r) => h("tr", null, cols.map((c) => h("td", null, r[c]))));
    return [h("h3", null, name), h("div", { className: "scroll" },
      h("table", { className: "ablation-table", dataset: { name } }, head, body))];
  }));
  if (ab.plot) { const img = $("ablation-plot"); img.src = "/api/ablation/plot.png?t=" + Date.now(); img.hidden = false; }
}

// each panel is drawn as its data arrives (the first paint does not wait for the slowest)
async function refresh() {
  if (!state.run) return;
  const draw = (path, fn) => getJSON(api(path)).then(fn);
  try {
    const summary = getJSON(api("/summary"));
    const curves = Promise.all([summary, getJSON(api("/curves"))]).then(([s, c]) => drawCurves(c, s.timing));
    await Promise.all([summary.then(drawSummary), curves, draw("/operators", drawOperators),
      loadIndividuals(), draw("/lineage", drawLineage)]);
    const s = await summary;
    showError(null);
    if (!state.selected && s.best) select(s.best.ind_id);
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.generation = s.generation ?? "";
  } catch (err) { showError(err); }
}

async function poll() {
  try {
    const t = await getJSON(api("/token"));
    $("live").classList.remove("stale");
    if (t.token !== state.token) { state.token = t.token; $("run").hidden = false; await refresh(); }
  } catch (err) { $("live").classList.add("stale"); showError(err); }
  setTimeout(poll, POLL_MS);
}

function pager() {
  const go = (order, offset) => { state.order = order; state.offset = Math.max(0, offset); loadIndividuals().catch(showError); };
  $("individuals-order").onchange = (e) => go(e.target.value, 0);
  $("individuals-prev").onclick = () => go(state.order, state.offset - 100);
  $("individuals-next").onclick = () => go(state.order, state.offset + 100);
}

async function main() {
  pager();
  try {
    const root = await getJSON("/api/root");
    $("root").textContent = root.root;
    const sel = $("run-select");
    fill(sel, root.runs.map((r) => h("option", { value: r }, r === "." ? "(this run)" : r)));
    const wanted = new URLSearchParams(location.search).get("run");
    state.run = root.runs.includes(wanted) ? wanted : root.runs[0];
    sel.value = state.run;
    sel.onchange = () => { state.run = sel.value; state.token = null; state.selected = null; state.offset = 0; history.replaceState(null, "", "?run=" + encodeURIComponent(sel.value)); };
    if (root.ablation) drawAblation(root.ablation);
    poll();
  } catch (err) { showError(err); }
}

main();
