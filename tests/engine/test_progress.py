"""The progress display: a redrawn line on a terminal, plain lines otherwise."""
from __future__ import annotations

import io

from asmevo.engine.command import open_engine
from asmevo.engine.progress import Progress
from asmevo.engine.rundir import create_run
from tests.engine.helpers import write_config


def _run(tmp_path, tty: bool) -> str:
    out = io.StringIO()
    run = create_run(write_config(tmp_path / "c.toml", generations=2), tmp_path / "run")
    engine = open_engine(run, (Progress(run.config, out, tty=tty),))
    engine.run()
    run.close()
    return out.getvalue()


def test_tty_redraws_a_live_line(tmp_path):
    text = _run(tmp_path, tty=True)
    assert "\r\x1b[K" in text and "evaluated this session" in text
    assert "gen 2/2" in text and "finished" in text


def test_plain_lines_without_a_tty(tmp_path):
    text = _run(tmp_path, tty=False)
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert [ln.split()[1] for ln in lines if ln.startswith("gen ")] == ["0/2", "1/2", "2/2"]
