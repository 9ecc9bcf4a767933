"""Archives an attacker wrote: markup in every text field a page can show.

:func:`craft` rewrites a real (closed) run's archive in place. Every value that is
text, or may be (SQLite stores text in an INTEGER column), becomes markup that
would run script and leave a ``data-injected`` element behind if any page inserted
it as HTML. ``kernel_too=False`` keeps the kernel's name and the edits' windows
real, so the side-by-side listing still renders (with markup in its heading).
"""
from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

MARK = ("<img src=x onerror=\"window.__injected=(window.__injected||0)+1\" data-injected=1>"
        "<b data-injected=1>&amp;</b>")

# what a directory name can hold (no slash)
DIR_MARK = "<img src=x onerror=window.__injected=1 data-injected=1>"


def mark(field: str) -> str:
    """Markup naming the field it was put in (so a test can find it on the page)."""
    return f"{field}:{MARK}"


def _details(kernel: str) -> str:
    return json.dumps({"hot_windows": [[kernel, 0, 4, 0.5], [MARK, MARK, MARK, MARK]],
                       mark("detail-key"): mark("detail-value"),
                       "first_mismatch": {"buffer": mark("buffer"), "bits": [MARK]}})


def _edits(text: str, kernel_too: bool) -> str:
    out = []
    for e in json.loads(text):
        e = dict(e, note=mark("note"), operator=mark("edit-operator"))
        if kernel_too:
            e.update(function=mark("function"), start=mark("start"), end=mark("end"),
                     lines=[mark("line")])
        out.append(e)
    return json.dumps(out)


def _ids(conn) -> dict[str, str]:
    """Every individual but K0 renamed to markup (K0's id is the engine's constant)."""
    return {i: (i if i == "k0" else f"{i}{MARK}")
            for (i,) in conn.execute("SELECT ind_id FROM individuals")}


def craft(run_dir: Path, kernel_too: bool = True) -> None:
    conn = sqlite3.connect(run_dir / "archive.db")
    kernel = conn.execute("SELECT kernel FROM runs").fetchone()[0]
    new = _ids(conn)
    conn.execute(
        "UPDATE runs SET name = ?, status = ?, stop_reason = ?, seed = ?, spec_path = ?,"
        " config_json = json_set(config_json, '$.run.timing', ?, '$.run.device', ?,"
        " '$.engine.generations', ?, '$.budget', json_object(?, 5, 'evaluations', ?))",
        (mark("name"), mark("status"), mark("stop"), mark("seed"), mark("spec"), mark("timing"),
         mark("device"), mark("generations"), mark("budget-key"), mark("budget")))
    if kernel_too:
        conn.execute("UPDATE runs SET kernel = ?", (mark("kernel"),))
    conn.execute("UPDATE checkpoints SET state = json_set(state, '$.spent',"
                 " json_object(?, 1, 'evaluations', ?))", (mark("spent-key"), mark("spent")))
    for old, parents, edits in conn.execute(
            "SELECT ind_id, parents, edits FROM individuals").fetchall():
        conn.execute("UPDATE individuals SET ind_id = ?, parents = ?, edits = ?, operator = ?,"
                     " edit_summary = ? WHERE ind_id = ?",
                     (new[old], json.dumps([new[p] for p in json.loads(parents)]),
                      _edits(edits, kernel_too), mark("operator") if old != "k0" else "k0",
                      mark("summary"), old))
    for old, renamed in new.items():
        conn.execute("UPDATE proposals SET ind_id = ? WHERE ind_id = ?", (renamed, old))
    conn.execute("UPDATE proposals SET operator = ?, kind = ?, reason = ?",
                 (mark("proposal-operator"), mark("kind"), mark("proposal-reason")))
    conn.execute("UPDATE evaluations SET reason = ?, details = ?, label = ?, device = ?,"
                 " timing = CASE WHEN timing IS NULL THEN NULL"
                 " ELSE json_set(timing, '$.label', ?) END,"
                 " status = CASE WHEN status = 'equal' THEN status ELSE ? END",
                 (mark("reason"), _details(kernel), mark("label"), mark("eval-device"),
                  mark("timing-label"), mark("verdict")))
    _llm(conn, new)
    conn.commit()
    conn.close()


def _llm(conn, new: dict[str, str]) -> None:
    """An agent conversation and its tries, every text field markup."""
    rid, = conn.execute("SELECT run_id FROM runs").fetchone()
    g, isl, slot = conn.execute("SELECT generation, island, slot FROM proposals"
                                " ORDER BY generation DESC LIMIT 1").fetchone()
    for turn in range(2):
        conn.execute("INSERT INTO llm_usage (run_id, generation, island, slot, operator, call_id,"
                     " model, tokens_in, tokens_out, cache_read_tokens, cache_write_tokens, cost,"
                     " status, reason, answer, created, turn) VALUES"
                     " (?,?,?,?,?,?,?,1,1,0,0,0.5,?,?,?,0,?)",
                     (rid, g, isl, slot, mark("llm-operator"), mark(f"call{turn}"),
                      mark("model"), mark("llm-status"), mark("llm-reason"), mark("answer"),
                      turn))
    conn.execute("INSERT INTO agent_tries (run_id, generation, island, slot, seq, operator,"
                 " parent, edit, eval_key, status, reason, speedup, label, fresh) VALUES"
                 " (?,?,?,?,0,?,?,?,?,?,?,1.5,?,1)",
                 (rid, g, isl, slot, mark("try-operator"), new.get("k0", "k0"), mark("try-edit"),
                  mark("try-key"), mark("try-status"), mark("try-reason"), mark("try-label")))


def ablation_tables(root: Path) -> None:
    """``asmevo ablate``'s tables, with markup in their headers and cells."""
    for name in ("summary", "kernels"):
        with open(root / f"{name}.csv", "w", newline="") as f:
            out = csv.writer(f)
            out.writerow([mark(f"{name}-head{k}") for k in range(3)])
            out.writerow([mark(f"{name}-cell{k}") for k in range(3)])
    (root / "summary.md").write_text(mark("markdown") + "\n")
