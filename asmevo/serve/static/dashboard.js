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
const state = { run: null, token: null, selected: null, order: "best", offset: 0, abiDrawn: false };

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

// A value from the archive (a verdict's details, the ABI, a tool call) as text and nested
// key/value tables, not a JSON dump: scalars as text, a list of scalars on one line, a
// list of objects as a table, an object as a table of its keys.
const MAX_ITEMS = 50;
const label = (k) => String(k).replace(/_/g, " ");
const isScalar = (v) => v === null || typeof v !== "object";
function more(n) { return n > MAX_ITEMS ? h("small", { className: "hint" }, ` (${n - MAX_ITEMS} more)`) : null; }

function valueNode(v, depth = 0) {
  if (isScalar(v)) return typeof v === "string" && v.includes("\n") ? h("pre", null, v) : fmt(v);
  if (depth > 6) return h("pre", null, JSON.stringify(v).slice(0, 2000));
  if (Array.isArray(v)) {
    if (!v.length) return "(none)";
    if (v.every(isScalar)) return [v.slice(0, MAX_ITEMS).map((x) => fmt(x)).join(", "), more(v.length)];
    if (v.every((x) => x && typeof x === "object" && !Array.isArray(x))) {
      const keys = [...new Set(v.slice(0, MAX_ITEMS).flatMap(Object.keys))];
      return [h("table", { className: "kv" }, h("tr", null, keys.map((k) => h("th", null, label(k)))),
        v.slice(0, MAX_ITEMS).map((row) => h("tr", null, keys.map((k) => h("td", null, valueNode(row[k], depth + 1)))))),
      more(v.length)];
    }
    return [h("ol", null, v.slice(0, MAX_ITEMS).map((x) => h("li", null, valueNode(x, depth + 1)))), more(v.length)];
  }
  const entries = Object.entries(v);
  if (!entries.length) return "(none)";
  // a small record of scalars inside a larger value (a launch's parameters): one line
  if (depth > 0 && entries.length <= 8 && entries.every(([, x]) => isScalar(x) && String(x).length < 40)) {
    return entries.map(([k, x]) => `${label(k)}=${fmt(x)}`).join(", ");
  }
  return h("table", { className: "kv" }, entries.map(([k, x]) => h("tr", null, h("th", null, label(k)),
    h("td", null, valueNode(x, depth + 1)))));
}

function drawSummary(s) {
  const best = s.best ? [fmt(s.best.speedup) + "x ", h("small", null, "(", s.best.label, "; ", s.best.coverage, ")")] : "none yet";
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
  table($("refusals"), o.refusals || [], [["operator", "operator"], ["without_edit", "no edit"],
    ["reasons", "top reasons", (v) => h("ul", { className: "reasons" }, (v || []).map((r) => h("li", null, `${r.count}× `, r.reason)))]]);
  const convs = o.conversations || [];
  $("llm-row").hidden = !convs.length && !o.llm_spend.length;
  table($("conversations"), convs, [["generation", "gen"], ["island", "isl"], ["slot", "slot"], ["operator", "operator"],
    ["turns", "turns"], ["tries", "tries"], ["tries_equal", "equal"], ["best_try", "best try", (v) => fmt(v, 3)],
    ["cost", "$", (v) => fmt(v, 4)], ["status", "outcome"], ["fitness", "speedup", (v) => fmt(v, 3)]], openConversation);
}

// one LLM proposal: each call (turn) with its tool call and cost, then each edit it tried
// through the engine with the verdict
async function openConversation(c) {
  const el = $("conversation");
  try {
    const q = `/conversation?generation=${c.generation}&island=${c.island}&slot=${c.slot}`;
    const d = await getJSON(api(q));
    const turn = (t) => h("div", { className: "turn call", dataset: { turn: String(t.turn) } },
      h("h4", null, `turn ${fmt(t.turn)} · ${fmt(t.operator)} · ${fmt(t.model)}`),
      h("p", null, `${fmt(t.tokens_in)} tokens in, ${fmt(t.tokens_out)} out (cache: ${fmt(t.cache_read_tokens)} read, ` +
        `${fmt(t.cache_write_tokens)} written) · $${fmt(t.cost, 4)} · `, h("b", null, t.status), t.reason ? ": " + t.reason : ""),
      t.answer === null ? h("p", { className: "hint" }, "(no tool call kept)") :
        h("details", { open: true }, h("summary", null, "tool call" + (t.answer_chars > 20000 ? " (cut)" : "")), valueNode(t.answer)));
    const tried = (t) => h("div", { className: "turn try" + (t.status === "equal" ? "" : " rejected"), dataset: { seq: String(t.seq) } },
      h("h4", null, `try ${fmt(t.seq)} on ${fmt(t.parent)}: `, h("span", { className: statusClass(t.status) }, t.status),
        t.speedup !== null ? ` · ${fmt(t.speedup, 3)}x ${t.label ?? ""}` : "", t.fresh ? "" : " (already evaluated)"),
      t.reason ? h("p", null, t.reason) : null, h("details", null, h("summary", null, "edit"), valueNode(t.edit)));
    fill(el, h("h3", null, `Conversation: generation ${d.generation}, island ${d.island}, slot ${d.slot} · ` +
      `${d.calls.length} calls · $${fmt(d.cost, 4)}`),
    h("h4", null, "Turns"), d.calls.length ? d.calls.map(turn) : h("p", { className: "hint" }, "(none)"),
    h("h4", null, "Tries (edits verified by the engine)"), d.tries.length ? d.tries.map(tried) : h("p", { className: "hint" }, "(none)"));
  } catch (err) { fill(el, h("div", { className: "error" }, err.message)); }
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
    fill($("detail"), h("p", null, h("b", { className: statusClass(v.status) }, v.status),
      v.coverage ? h("span", { className: "coverage" }, " · " + v.coverage) : null, " ", v.reason),
      h("p", null, `operator ${fmt(d.operator)}, generation ${fmt(d.generation)}, island ${fmt(d.island)}, ` +
        `parents ${d.parents.join(", ") || "–"}; speedup ${fmt(d.speedup)} ${d.label ?? ""}`),
      // a rejection's verdict is what one opens it for: open; an accepted one's, folded
      h("details", { open: v.status !== "equal" }, h("summary", null, h("b", null, "Verdict in full")),
        h("table", { id: "verdict", className: "kv" }, Object.entries(v.details).map(([k, x]) => h("tr", null,
          h("th", null, label(k)), h("td", null, valueNode(x, 1)))))),
      d.timing && typeof d.timing === "object" ? h("details", null, h("summary", null, h("b", null, "Timing")),
        valueNode(d.timing)) : null,
      h("h3", null, "Edits"), d.edits.length ? h("ol", { className: "edits" }, d.edits.map((e, n) => h("li", null,
        edit(e, n === d.edits.length - 1)))) : h("p", { className: "hint" }, "(none: K0)"));
  } catch (err) {
    fill($("detail"), h("div", { className: "error" }, err.message));
  }
  try {
    drawDiff(await getJSON(api("/diff/" + encodeURIComponent(indId))));
  } catch (err) {          // the listing could not be made: said there, the verdict stays
    fill($("diff-summary"), h("div", { className: "error" }, err.message));
    fill($("diff"));
  }
}

function heat(share) {
  const on = typeof share === "number" && share > 0;
  return h("td", { className: "heat", title: on ? `hot window: ${(100 * share).toFixed(1)}% of modeled time` : "",
    style: on ? { background: `rgba(255, 80, 0, ${Math.min(0.85, 0.15 + share)})` } : {} });
}

function drawDiff(d) {
  $("diff-summary").textContent = `kernel ${d.kernel}: ${d.changed_rows} changed rows`;
  fill($("diff"), h("tr", null, h("th", null, "#"), h("th", { className: "heat" }), h("th", null, "K0"),
    h("th", null, "#"), h("th", { className: "heat" }), h("th", null, d.ind_id)),
  d.rows.map(([tag, li, lt, ls, ri, rt, rs]) => h("tr", { className: tag, dataset: { k0: li ?? "" } },
    h("td", { className: "idx" }, li ?? ""), heat(ls), h("td", { className: "code left" }, lt),
    h("td", { className: "idx" }, ri ?? ""), heat(rs), h("td", { className: "code right" }, rt))));
  drawProfile(d.profile || []);
  if (!state.abiDrawn) { fill($("abi"), valueNode(d.abi)); state.abiDrawn = true; }
}

function drawProfile(windows) {
  const show = (w) => {
    const row = document.querySelector(`#diff tr[data-k0="${w.start}"]`);
    if (!row) return;
    row.scrollIntoView({ block: "center" });
    row.classList.add("flash"); setTimeout(() => row.classList.remove("flash"), 1500);
  };
  table($("profile"), windows, [["start", "lines", (v, w) => `${w.start}–${w.end - 1}`],
    ["share", "share of modeled time", (v) => [h("span", { className: "bar", style: { width: `${Math.round(120 * (v || 0))}px` } }),
      `${(100 * (v || 0)).toFixed(1)}%`]], ["first", "first instruction"], ["last", "last instruction"]], show);
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
    sel.onchange = () => { state.run = sel.value; state.token = null; state.selected = null; state.offset = 0; state.abiDrawn = false; history.replaceState(null, "", "?run=" + encodeURIComponent(sel.value)); };
    if (root.ablation) drawAblation(root.ablation);
    poll();
  } catch (err) { showError(err); }
}

main();
