"""Schema version 2: an agent's tries, the turn of each LLM call, the notebook's evaluation
key; a version-1 archive (written before them) migrates in place and keeps its rows."""
from __future__ import annotations

import json

import pytest

from asmevo.archive import Archive
from asmevo.archive import store as store_mod


def _v1_archive(path, monkeypatch):
    """An archive as asmevo wrote it before schema 2: a run, K0, one child, one LLM call."""
    with monkeypatch.context() as m:
        m.setattr(store_mod, "MIGRATIONS", {1: store_mod.MIGRATIONS[1]})
        m.setattr(store_mod, "SCHEMA_VERSION", 1)
        with Archive(path, create=True) as a:
            rid = a.create_run(name="old", seed=1, k0_sha256="0" * 64, kernel="kern",
                               spec_path="s", spec_size="small", eval_context="ctx",
                               config_toml="", config_json={})
            a.conn.execute(      # as version 1 wrote it: no worker column yet
                "INSERT INTO evaluations (eval_context, eval_key, code_sha256, status, reason,"
                " details, fitness, seconds, run_id, generation, created) VALUES"
                " ('ctx', 'e1', ?, 'mismatch', 'out[3] differs', '{\"index\": 3}', 0, 0, ?, 0, 0)",
                ("ab" * 32, rid))
            edit = {"function": "kern", "start": 0, "end": 1, "lines": ["s_nop 0"]}
            with a.transaction() as c:
                a.put_individuals(c, rid, [
                    {"ind_id": "k0", "island": 0, "generation": 0, "slot": 0,
                     "operator": "k0", "parents": "[]", "edits": "[]", "n_edits": 0,
                     "edit_summary": "K0", "code_sha256": None, "eval_key": "e0"},
                    {"ind_id": "0-0-1", "island": 0, "generation": 0, "slot": 1,
                     "operator": "x", "parents": '["k0"]', "edits": json.dumps([edit]),
                     "n_edits": 1, "edit_summary": "kern[0:1]", "code_sha256": None,
                     "eval_key": "e1"}])
            a.conn.execute(      # as version 1 wrote it: no turn column yet
                "INSERT INTO llm_usage (run_id, generation, island, slot, operator, call_id,"
                " model, tokens_in, tokens_out, cache_read_tokens, cache_write_tokens, cost,"
                " created) VALUES (?, 0, 0, 1, 'x', 'c1', 'm', 1, 1, 0, 0, 0.5, 0)", (rid,))
            assert a.version == 1
    return rid


def test_a_version_1_archive_migrates_and_keeps_its_rows(tmp_path, monkeypatch):
    p = tmp_path / "a.db"
    rid = _v1_archive(p, monkeypatch)
    before = {f.name: f.read_bytes() for f in tmp_path.iterdir()}
    with Archive(p, readonly=True) as view:    # reports read a migrated private copy
        assert view.version == store_mod.SCHEMA_VERSION
        assert view.notebook("kern")[0]["eval_key"] == "e1"
        with pytest.raises(Exception):
            view.conn.execute("DELETE FROM runs")         # the view is query-only
    assert {f.name: f.read_bytes() for f in tmp_path.iterdir()} == before
    with Archive(p) as a:                      # a resume migrates the run's own file
        assert a.version == store_mod.SCHEMA_VERSION
        (row,) = a.notebook("kern")
        assert row["eval_key"] == "e1" and row["status"] == "mismatch"
        assert a.llm_call(rid, "c1")["turn"] is None and a.llm_dollars(rid) == 0.5
        assert a.lineage_tries(rid, "0-0-1", before_generation=5, limit=10) == []


def test_lineage_tries_follow_every_ancestor_and_stop_at_the_generation(tmp_path):
    with Archive(tmp_path / "a.db", create=True) as a:
        rid = a.create_run(name="r", seed=1, k0_sha256="0" * 64, kernel="kern",
                           spec_path="s", spec_size="small", eval_context="ctx",
                           config_toml="", config_json={})
        def ind(i, parents, g):
            return {"ind_id": i, "island": 0, "generation": g, "slot": 0, "operator": "o",
                    "parents": json.dumps(parents), "edits": "[]", "n_edits": 0,
                    "edit_summary": "", "code_sha256": None, "eval_key": "e"}

        def try_(g, slot, parent, seq=0):
            return {"generation": g, "island": 0, "slot": slot, "seq": seq,
                    "operator": "llm_agent", "parent": parent, "edit": "{}", "eval_key": None,
                    "status": "refused", "reason": "", "speedup": None, "label": None,
                    "fresh": 0}
        with a.transaction() as c:
            # k0 -> a (gen 1) ; b (gen 1, crossover of a and k0) -> c (gen 2); z unrelated
            a.put_individuals(c, rid, [ind("k0", [], 0), ind("a", ["k0"], 1),
                                       ind("z", ["y"], 1), ind("b", ["a", "k0"], 1),
                                       ind("c", ["b"], 2)])
            a.put_tries(c, rid, [try_(0, 1, "k0"), try_(1, 1, "a"), try_(1, 2, "z"),
                                 try_(2, 1, "b"), try_(2, 1, "b", 1), try_(3, 1, "c")])
        got = a.lineage_tries(rid, "c", before_generation=3, limit=10)
        assert [(t["generation"], t["parent"], t["seq"]) for t in got] == [
            (2, "b", 1), (2, "b", 0), (1, "a", 0), (0, "k0", 0)]
        assert len(a.lineage_tries(rid, "c", before_generation=3, limit=2)) == 2
        assert a.lineage_tries(rid, "k0", before_generation=1, limit=9)[0]["parent"] == "k0"
