"""The dashboard in a real headless browser (Debian's chromium through chromedriver).

Skips, saying why, where no browser, driver or selenium is installed; CI installs
all three (.ci/run), so there it always runs.
"""
from __future__ import annotations

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
