"""The dashboard in a real headless browser (Debian's chromium through chromedriver).

Skips, saying why, where no browser, driver or selenium is installed; CI installs
all three (.ci/run), so there it always runs.
"""
from __future__ import annotations

import contextlib
import io
import shutil
import threading
import time

import pytest

pytest.importorskip("flask", reason="the dashboard needs the serve extra (flask)")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed "
                                "(pip install -e '.[browser-tests]')")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER),
                                reason="no chromium/chromedriver (apt-get install chromium "
                                       "chromium-driver)")
# no background traffic: this machine's network is closed, and the test must not need it
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,2200")


@pytest.fixture()
def server(stepped_run):
    from werkzeug.serving import make_server

    from asmevo.serve.app import create_app

    run_dir, engine = stepped_run
    srv = make_server("127.0.0.1", 0, create_app(run_dir), threaded=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_port}/", engine
    srv.shutdown()


@pytest.fixture()
def browser(tmp_path):
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for f in FLAGS + (f"--user-data-dir={tmp_path / 'profile'}",):
        opts.add_argument(f)
    opts.binary_location = CHROMIUM
    drv = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield drv
    drv.quit()


def wait_for(drv, script: str, timeout: float = 20.0):
    """Poll a JavaScript expression until it is truthy; return its value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = drv.execute_script("return " + script)
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for: {script}")


def non_empty(png: bytes) -> tuple[int, float]:
    """(distinct colours, share of non-background pixels) of a screenshot."""
    import numpy as np
    from PIL import Image

    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    flat = img.reshape(-1, 3)
    background = np.all(flat >= 245, axis=1)
    return len(np.unique(flat[::7], axis=0)), float(1.0 - background.mean())


def test_page_shows_curve_lineage_diff_and_follows_the_run(server, browser, tmp_path):
    url, engine = server
    browser.get(url)
    assert wait_for(browser, "document.body.dataset.generation") == "1"
    # the island curve: one Plotly trace per island
    assert wait_for(browser, "document.querySelectorAll('#island-curve .scatterlayer .trace')"
                             ".length") == 2
    # the lineage of the best reaches back to K0
    assert wait_for(browser, "document.querySelector('#lineage span[data-ind=\"k0\"]') !== null")
    # the best is selected: its verdict and the side-by-side listing are shown
    assert wait_for(browser, "document.querySelectorAll('#diff tr').length") > 10
    assert "asm_copy" in browser.find_element("id", "diff-summary").text
    before = wait_for(browser, "document.querySelectorAll('#individuals tr[data-i]').length")
    shot = browser.get_screenshot_as_png()
    (tmp_path / "dashboard.png").write_bytes(shot)
    colours, ink = non_empty(shot)
    assert colours > 20 and ink > 0.05, (colours, ink)

    # a rejected or another individual, clicked: its verdict in full replaces the first
    rows = browser.find_elements("css selector", "#individuals tr[data-i]")
    rows[-1].click()
    wait_for(browser, "document.querySelector('#verdict') && "
                      "document.querySelector('#detail-id').textContent.length > 0")

    # a generation commits while the page is open: it refreshes by itself
    engine.step()
    assert wait_for(browser, "document.body.dataset.generation === '2'")
    after = wait_for(browser, "document.querySelectorAll('#individuals tr[data-i]').length")
    assert after >= before
    assert browser.find_element("id", "error").get_attribute("hidden") is not None


def test_damaged_archive_shows_an_error_panel(stepped_run, browser):
    from werkzeug.serving import make_server

    from asmevo.serve.app import create_app

    run_dir, engine = stepped_run
    engine.archive.close()
    (run_dir / "archive.db").write_bytes(b"not a database at all" * 100)
    srv = make_server("127.0.0.1", 0, create_app(run_dir), threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        browser.get(f"http://127.0.0.1:{srv.server_port}/")
        text = wait_for(browser, "!document.getElementById('error').hidden && "
                                 "document.getElementById('error').textContent")
        assert "archive.db" in text
    finally:
        srv.shutdown()


INJECTED = ("document.querySelectorAll('[data-injected]').length + "
            "(window.__injected === undefined ? 0 : 1000)")


def test_crafted_archive_renders_as_text(crafted_root, browser):
    """Markup in every field of two crafted runs, their directory names and an ablation's
    tables: every panel shows it as text, and no element of it reaches the DOM."""
    from urllib.parse import quote

    from werkzeug.serving import make_server

    from asmevo.serve.app import create_app
    from tests.serve.crafted import DIR_MARK, MARK

    root, a, b = crafted_root
    srv = make_server("127.0.0.1", 0, create_app(root), threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_port}/"
    shown = "document.getElementById('{}').textContent.includes(arguments[0])"
    try:
        for run, listing in ((a, False), (b, True)):
            browser.get(base + "?run=" + quote(run.name, safe=""))
            assert wait_for(browser, "document.body.dataset.generation !== undefined")
            wait_for(browser, "document.querySelector('#verdict') !== null && "
                              "document.querySelectorAll('#lineage li').length > 1")
            wait_for(browser, "document.querySelectorAll('#diff tr').length > 1"
                     if listing else "document.querySelector('#diff-summary .error') !== null")
            wait_for(browser, "document.querySelectorAll('#conversations tr').length > 1")
            assert browser.execute_script("return " + INJECTED) == 0
            for panel in ("cards", "individuals", "lineage", "detail", "operators", "llm",
                          "conversations", "ablation-tables") + (("diff",) if listing else ()):
                assert browser.execute_script("return " + shown.format(panel), MARK), panel
            if not listing:     # the listing's refusal names the individual (cut short)
                assert browser.execute_script("return " + shown.format("diff-summary"),
                                              "<img src=x")
            assert browser.execute_script("return " + shown.format("run-select"), DIR_MARK)
            title = wait_for(browser, "document.querySelector('#island-curve .ytitle') && "
                                      "document.querySelector('#island-curve .ytitle')"
                                      ".textContent.includes('data-injected') && "
                                      "document.querySelector('#island-curve .ytitle')"
                                      ".textContent")
            assert "<img src=x" in title and "data-injected" in title     # Plotly: text too
            # every rejected individual's page, and a click on each lineage node
            browser.execute_script("document.getElementById('individuals-order').value = "
                                   "'newest'; document.getElementById('individuals-order')"
                                   ".dispatchEvent(new Event('change'))")
            for span in browser.find_elements("css selector", "#lineage span[data-ind]")[:4]:
                span.click()
                time.sleep(0.3)
            assert browser.execute_script("return " + INJECTED) == 0
    finally:
        srv.shutdown()


# --- the issue-43 bugs: each test failed before its fix ------------------------------------

# every response the page gets that is not OK, and every JSON it cannot parse, recorded
# from the first request on (installed before the page's own scripts run)
RECORD_FAILURES = """
window.__failed = [];
window.__requests = 0;
const realFetch = window.fetch.bind(window);
window.fetch = async (...args) => {
  window.__requests += 1;
  const r = await realFetch(...args);
  if (!r.ok) {
    const text = await r.clone().text();
    window.__failed.push(`${r.status} ${String(args[0])}: ${text.slice(0, 300)}`);
  }
  return r;
};
"""


@contextlib.contextmanager
def serving(run_dir):
    from werkzeug.serving import make_server

    from asmevo.serve.app import create_app

    srv = make_server("127.0.0.1", 0, create_app(run_dir), threaded=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}/"
    finally:
        srv.shutdown()


def record_failures(drv) -> None:
    drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_FAILURES})


def open_row(drv, table: str, ind_id: str) -> None:
    """Click the row of ``ind_id`` in the individuals table."""
    wait_for(drv, f"[...document.querySelectorAll('#{table} tr[data-i]')].some("
                  f"(r) => r.cells[0].textContent === arguments[0])".replace("arguments[0]",
                                                                          repr(ind_id)))
    for row in drv.find_elements("css selector", f"#{table} tr[data-i]"):
        if row.find_elements("css selector", "td")[0].text == ind_id:
            row.click()
            return
    raise AssertionError(f"no row {ind_id}")


def test_a_rejected_individual_opens(verified_run, browser):
    """Its verdict holds NaN and infinity (a family member's float scalar, a NaN output):
    the server sent them as bare NaN tokens, and the page said "Unexpected token 'N'"."""
    from tests.serve.conftest import reject_one

    run_dir, engine = verified_run
    engine.archive.close()
    rejected = reject_one(run_dir)
    record_failures(browser)
    with serving(run_dir) as url:
        browser.get(url)
        wait_for(browser, "document.body.dataset.generation !== undefined")
        browser.execute_script("const o = document.getElementById('individuals-order');"
                               "o.value = 'newest'; o.dispatchEvent(new Event('change'))")
        open_row(browser, "individuals", rejected)
        text = wait_for(browser, "(document.querySelector('#detail .error') || "
                                 "document.querySelector('#detail').textContent.includes("
                                 "'family member N=9')) && "
                                 "document.querySelector('#detail').textContent")
        assert "mismatch" in text and "NaN" in text and "Infinity" in text, text
        assert "Unexpected token" not in text
        assert browser.execute_script("return document.querySelector('#detail .error')") is None
        assert browser.execute_script("return window.__failed") == []


STEPS = 12      # generations committed under the readers


@pytest.mark.generations(STEPS + 4)
def test_polling_through_a_live_run_fails_no_request(stepped_run, browser, monkeypatch):
    """Generations commit while the page and a stream of requests read the archive: a
    view that the next state replaced was closed under a request still reading it (HTTP
    500/409 "Cannot operate on a closed database"). A page of individuals is read slowly
    here, as from a large archive on a slow disk, so that every commit meets a request
    halfway through (on this small archive the window is a few milliseconds: about one
    request in 1,500 failed)."""
    from asmevo.archive import pages

    rows = pages.rows

    def slow_rows(*args, **kw):
        time.sleep(0.25)
        return rows(*args, **kw)

    monkeypatch.setattr(pages, "rows", slow_rows)
    run_dir, engine = stepped_run
    record_failures(browser)
    with serving(run_dir) as url:
        browser.get(url)
        wait_for(browser, "document.body.dataset.generation === '1'")
        # the page's own polling, and six readers more asking for every view in turn
        browser.execute_script("""
            window.__stop = false;
            const paths = ['/api/summary', '/api/curves', '/api/operators', '/api/individuals',
                           '/api/individuals?order=newest', '/api/lineage', '/api/diff/k0',
                           '/api/individual/k0'];
            for (let reader = 0; reader < 6; reader++) {
              (async () => {
                for (let i = reader; !window.__stop; i++) {
                  const r = await fetch(paths[i % paths.length], { cache: 'no-store' });
                  await r.text();
                }
              })();
            }""")
        for _ in range(STEPS):
            engine.step()
            time.sleep(0.3)
        assert wait_for(browser, f"document.body.dataset.generation === '{STEPS + 1}'",
                        timeout=30)
        browser.execute_script("window.__stop = true")
        time.sleep(0.5)
        failed = browser.execute_script("return window.__failed")
        requests = browser.execute_script("return window.__requests")
    assert failed == [], failed[:5]
    assert requests > 40, requests


def test_changed_lines_stay_visible_inside_hot_windows(verified_run, browser):
    """The hot shading was the code cell's inline background, over the change colour."""
    from asmevo.serve.app import create_app

    run_dir, engine = verified_run
    client = create_app(run_dir).test_client()
    pick = None
    for row in client.get("/api/individuals").get_json()["rows"]:
        if row["n_edits"]:
            d = client.get(f"/api/diff/{row['ind_id']}").get_json()
            hot = [str(r[4]) for r in d["rows"] if r[0] != "equal" and r[6] > 0]
            if hot:
                pick = row["ind_id"], hot
                break
    assert pick, "no individual changes a line inside a hot window"
    with serving(run_dir) as url:
        browser.get(url)
        wait_for(browser, "document.body.dataset.generation !== undefined")
        open_row(browser, "individuals", pick[0])
        wait_for(browser, "document.getElementById('detail-id').textContent === arguments[0]"
                 .replace("arguments[0]", repr(pick[0])) + " && document.querySelectorAll("
                 "'#diff tr.replace, #diff tr.insert').length > 0")
        # the individual's side of each changed row in a hot window: its code cell, and
        # the heat shown beside it (where the page shows one)
        cells = browser.execute_script("""
            const hot = new Set(arguments[0]);
            return [...document.querySelectorAll('#diff tr.replace, #diff tr.insert')]
              .filter((tr) => hot.has(tr.querySelectorAll('td.idx')[1].textContent))
              .map((tr) => [getComputedStyle(tr.querySelector('td.code.right')).backgroundColor,
                            tr.querySelector('td.code.right').previousElementSibling.className,
                            getComputedStyle(tr.querySelector('td.code.right')
                                             .previousElementSibling).backgroundColor]);""",
                                       pick[1])
    assert len(cells) == len(pick[1]), (cells, pick)
    for code, _, _ in cells:
        assert code == "rgb(255, 243, 196)", cells      # the change colour, as outside
    for _, cls, heat in cells:
        assert cls == "heat" and heat.startswith("rgba(255, 80, 0"), cells  # heat beside it


def test_no_sideways_scroll_at_1280_and_readable_panels(verified_run, browser):
    run_dir, engine = verified_run
    browser.set_window_size(1280, 1600)
    with serving(run_dir) as url:
        browser.get(url)
        wait_for(browser, "document.querySelectorAll('#diff tr').length > 10")
        wait_for(browser, "document.querySelectorAll('#refusals tr').length > 1")
        wide = browser.execute_script("return [document.documentElement.scrollWidth, "
                                      "document.documentElement.clientWidth]")
        assert wide[0] <= wide[1], wide
        # the ABI and the profile as tables, not JSON
        abi = browser.find_element("id", "abi").text
        assert "vgprs" in abi and "{" not in abi and '"' not in abi
        assert browser.execute_script("return document.querySelectorAll('#abi table.kv th')"
                                      ".length") > 10
        prof = browser.execute_script("return [...document.querySelectorAll('#profile tr')]"
                                      ".map((r) => r.textContent)")
        assert len(prof) > 2 and "%" in prof[1]
        # why an operator proposed nothing, with counts
        refusals = browser.find_element("id", "refusals").text
        assert "nop_remove" in refusals and "×" in refusals


@pytest.fixture()
def agent_run(tmp_path, monkeypatch):
    """A real ``llm_agent`` search on asm_copy against the replay server (the script of
    tests/operators/llm/test_agent_e2e.py: show, analyze, a wrong try, a right one,
    submit; then a second conversation)."""
    import json

    pytest.importorskip("anthropic", reason="the LLM operators need the llm extra")
    from asmevo.operators.llm.replay import ReplayServer
    from tests.operators.llm.test_agent_e2e import SCRIPT, agent_config
    from tests.operators.llm.test_search_e2e import run_search

    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
    monkeypatch.setenv("ASMEVO_CACHE_DIR", str(tmp_path / "cache"))
    srv = ReplayServer(json.loads(SCRIPT.read_text())).start()
    try:
        run_search(agent_config(srv.base_url), tmp_path / "run")
    finally:
        srv.stop()
    return tmp_path / "run"


def test_the_conversation_viewer_shows_turns_tool_calls_tries_and_cost(agent_run, browser):
    import sqlite3

    conn = sqlite3.connect(agent_run / "archive.db")
    g, isl, slot, calls, cost = conn.execute(
        "SELECT generation, island, slot, COUNT(*), SUM(cost) FROM llm_usage WHERE turn IS NOT "
        "NULL GROUP BY generation, island, slot ORDER BY generation LIMIT 1").fetchone()
    tries = conn.execute("SELECT seq, status FROM agent_tries WHERE generation = ? AND "
                         "island = ? AND slot = ? ORDER BY seq", (g, isl, slot)).fetchall()
    conn.close()
    assert calls >= 4 and {s for _, s in tries} >= {"mismatch", "equal"}
    with serving(agent_run) as url:
        browser.get(url)
        wait_for(browser, "document.querySelectorAll('#conversations tr[data-i]').length > 0")
        browser.find_elements("css selector", "#conversations tr[data-i]")[0].click()
        wait_for(browser, "document.querySelectorAll('#conversation .turn.call').length > 0")
        shown = browser.execute_script("""
            const c = document.getElementById('conversation');
            return {calls: c.querySelectorAll('.turn.call').length,
                    tries: [...c.querySelectorAll('.turn.try')].map((t) => t.textContent),
                    head: c.querySelector('h3').textContent, text: c.textContent};""")
    assert shown["calls"] == calls
    assert f"${cost:.4f}" in shown["head"]
    # each try with its verdict: the wrong one's mismatch, the right one's speedup
    assert len(shown["tries"]) == len(tries)
    for (seq, status), text in zip(tries, shown["tries"]):
        assert text.startswith(f"try {seq}") and status in text
    # the tool calls as the archive keeps them (show, analyze, try_edit, submit), as text
    for tool_word in ("lines", "tokens in"):
        assert tool_word in shown["text"]
    assert "{" not in shown["text"]
