// asmevo dashboard: fetches JSON from the server, redraws when the archive's token changes.
"use strict";

const POLL_MS = 2000;
const state = { run: null, token: null, selected: null, label: "" };

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
const fmt = (v, d = 4) => (v === null || v === undefined ? "–" : typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(d)) : esc(v));
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

function table(el, rows, cols, onClick) {
  const head = "<tr>" + cols.map((c) => `<th>${esc(c[1])}</th>`).join("") + "</tr>";
  const body = rows.map((r, i) => `<tr data-i="${i}" class="${onClick ? "clickable" : ""}">` +
    cols.map((c) => `<td class="${c[0] === "status" ? "status-" + esc(r.status) : ""}">${c[2] ? c[2](r[c[0]], r) : fmt(r[c[0]])}</td>`).join("") + "</tr>").join("");
  el.innerHTML = head + (body || `<tr><td colspan="${cols.length}">(none)</td></tr>`);
  if (onClick) el.querySelectorAll("tr[data-i]").forEach((tr) => tr.onclick = () => onClick(rows[+tr.dataset.i]));
}

function drawSummary(s) {
  state.label = s.timing || "";
  const best = s.best ? `${fmt(s.best.speedup)}x <small>(${esc(s.best.label)})</small>` : "none yet";
  const left = Object.entries(s.budget_left).filter(([, v]) => v !== null).map(([k, v]) => `${esc(k)} ${fmt(v, 1)}`).join(", ") || "no limits";
  const cards = [["run", `${esc(s.name)} <small>${esc(s.kernel)}</small>`], ["status", `${esc(s.status)} <small>${esc(s.stop_reason)}</small>`],
    ["generation", `${fmt(s.generation)} / ${fmt(s.generations)}`], ["evaluations", fmt(s.evaluations)],
    ["best speedup", best], ["budget left", left], ["device", `${esc(s.device)} <small>${esc(s.timing)}</small>`]];
  $("cards").innerHTML = cards.map(([k, v]) => `<div class="card">${esc(k)}<b>${v}</b></div>`).join("");
  table($("islands"), s.islands, [["island", "island"], ["evaluations", "evals"], ["accepted", "accepted"],
    ["acceptance", "acceptance", (v) => fmt(v, 2)], ["best", "best"], ["evals_per_minute", "evals/min", (v) => fmt(v, 1)]]);
}

function drawCurves(c) {
  const traces = c.series.map((s) => ({ x: s.evaluations, y: s.best, name: "island " + s.island, mode: "lines", line: { shape: "hv" } }));
  const layout = { margin: { t: 10, r: 10, b: 40, l: 50 }, xaxis: { title: { text: "evaluations" } },
    yaxis: { title: { text: `best speedup over K0 (${state.label})` } }, legend: { orientation: "h" } };
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
  if (!l.root) { el.innerHTML = '<p class="hint">no accepted individual yet</p>'; return; }
  const seen = new Set();
  const node = (id) => {
    const n = l.nodes[id];
    if (!n) return `<li>${esc(id)} (not shown)</li>`;
    if (seen.has(id)) return `<li><span data-ind="${esc(id)}">${esc(id)}</span> (above)</li>`;
    seen.add(id);
    const kids = n.parents.map(node).join("");
    return `<li><span data-ind="${esc(id)}" class="status-${esc(n.status)}">${esc(id)}</span> ` +
      `<small>${esc(n.operator)} · ${esc(n.status)} · ${fmt(n.speedup)}x</small><br><small>${esc(n.edit_summary)}</small>` +
      (kids ? `<ul>${kids}</ul>` : "") + "</li>";
  };
  el.innerHTML = `<ul>${node(l.root)}</ul>` + (l.truncated ? '<p class="hint">(truncated)</p>' : "");
  el.querySelectorAll("span[data-ind]").forEach((s) => s.onclick = () => select(s.dataset.ind));
}

function drawIndividuals(rows) {
  table($("individuals"), rows, [["ind_id", "id"], ["generation", "gen"], ["island", "isl"], ["operator", "operator"],
    ["status", "verdict"], ["fitness", "speedup"], ["edit_summary", "edit"]], (r) => select(r.ind_id));
}

async function select(indId) {
  state.selected = indId;
  $("detail-id").textContent = indId;
  try {
    const d = await getJSON(api("/individual/" + encodeURIComponent(indId)));
    $("detail").innerHTML = `<p><b class="status-${esc(d.verdict.status)}">${esc(d.verdict.status)}</b> ${esc(d.verdict.reason)}</p>` +
      `<p>operator ${esc(d.operator)}, generation ${d.generation}, island ${d.island}, parents ${esc(d.parents.join(", ") || "–")}; ` +
      `speedup ${fmt(d.speedup)} ${esc(d.label || "")}</p>` +
      `<h3>Verdict in full</h3><table id="verdict">` +
      Object.entries(d.verdict.details).map(([k, v]) => `<tr><th>${esc(k)}</th><td><pre>${esc(JSON.stringify(v))}</pre></td></tr>`).join("") +
      `</table><h3>Edits</h3>` + d.edits.map((e, n) => `<details${n === d.edits.length - 1 ? " open" : ""}><summary>${n + 1}. ` +
      `${esc(e.function)}[${e.start}:${e.end}] ${esc(e.note || "")}</summary><pre>${esc((e.lines || []).join("\n"))}</pre></details>`).join("");
    const diff = await getJSON(api("/diff/" + encodeURIComponent(indId)));
    drawDiff(diff);
  } catch (err) { $("detail").innerHTML = `<div class="error">${esc(err.message)}</div>`; }
}

function shade(share) { return share > 0 ? `background: rgba(255, 80, 0, ${Math.min(0.6, 0.08 + share)})` : ""; }

function drawDiff(d) {
  $("diff-summary").textContent = `kernel ${d.kernel}: ${d.changed_rows} changed rows; shading = share of modeled time of the hot window`;
  $("diff").innerHTML = "<tr><th>#</th><th>K0</th><th>#</th><th>" + esc(d.ind_id) + "</th></tr>" + d.rows.map(([tag, li, lt, ls, ri, rt, rs]) =>
    `<tr class="${tag}"><td class="idx">${li ?? ""}</td><td class="code left" style="${shade(ls)}">${esc(lt)}</td>` +
    `<td class="idx">${ri ?? ""}</td><td class="code right" style="${shade(rs)}">${esc(rt)}</td></tr>`).join("");
  $("abi").textContent = JSON.stringify(d.abi, null, 1);
}

async function drawAblation(ab) {
  $("ablation").hidden = false;
  const parts = Object.entries(ab.tables).map(([name, rows]) => {
    const cols = rows.length ? Object.keys(rows[0]) : [];
    return `<h3>${esc(name)}</h3><div class="scroll"><table class="ablation-table" data-name="${esc(name)}"><tr>${cols.map((c) => `<th>${esc(c)}</th>`).join("")}</tr>` +
      rows.map((r) => `<tr>${cols.map((c) => `<td>${esc(r[c])}</td>`).join("")}</tr>`).join("") + "</table></div>";
  });
  $("ablation-tables").innerHTML = parts.join("");
  if (ab.plot) { const img = $("ablation-plot"); img.src = "/api/ablation/plot.png?t=" + Date.now(); img.hidden = false; }
}

async function refresh() {
  if (!state.run) return;
  try {
    const [s, c, o, inds, lin] = await Promise.all([getJSON(api("/summary")), getJSON(api("/curves")),
      getJSON(api("/operators")), getJSON(api("/individuals")), getJSON(api("/lineage"))]);
    showError(null);
    $("run").hidden = false;
    drawSummary(s); drawCurves(c); drawOperators(o); drawIndividuals(inds); drawLineage(lin);
    if (!state.selected && s.best) select(s.best.ind_id);
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.generation = s.generation ?? "";
  } catch (err) { showError(err); }
}

async function poll() {
  try {
    const t = await getJSON(api("/token"));
    $("live").classList.remove("stale");
    if (t.token !== state.token) { state.token = t.token; await refresh(); }
  } catch (err) { $("live").classList.add("stale"); showError(err); }
  setTimeout(poll, POLL_MS);
}

async function main() {
  try {
    const root = await getJSON("/api/root");
    $("root").textContent = root.root;
    const sel = $("run-select");
    sel.innerHTML = root.runs.map((r) => `<option value="${esc(r)}">${r === "." ? "(this run)" : esc(r)}</option>`).join("");
    const wanted = new URLSearchParams(location.search).get("run");
    state.run = root.runs.includes(wanted) ? wanted : root.runs[0];
    sel.value = state.run;
    sel.onchange = () => { state.run = sel.value; state.token = null; state.selected = null; history.replaceState(null, "", "?run=" + encodeURIComponent(sel.value)); };
    if (root.ablation) drawAblation(root.ablation);
    poll();
  } catch (err) { showError(err); }
}

main();
