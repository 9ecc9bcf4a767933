"""A full disk, a read-only run directory, an unwritable one: one line naming the path,
exit 2, and the archive as it was committed (resumed where it can be written, the run
ends with an undisturbed run's archive).

The full disk is a small tmpfs and the read-only directory a tmpfs remounted read-only,
each in a mount namespace of the test's own (``unshare --user --map-root-user --mount``:
no change to the machine's mounts); unwritable is a folder without write permission for
a run that has dropped root's permission override (``setpriv``). Where the kernel or the
tools do not allow these, the tests skip and say why.
"""
from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.helpers import ROOT, archive_content, assert_same_archive, write_config

NO_OVERRIDE = ["--inh-caps=-dac_override,-dac_read_search",
               "--bounding-set=-dac_override,-dac_read_search"]


def _probe(tmp: Path) -> str | None:
    """Why the namespace tests cannot run here, or None."""
    if not shutil.which("unshare"):
        return "no unshare (util-linux)"
    point = tmp / "probe"
    point.mkdir()
    r = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                        f"mount -t tmpfs -o size=64k tmpfs {point}"],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else \
        f"cannot mount a tmpfs in a user namespace here ({r.stderr.strip()[:120]})"


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    """(environment, config, an undisturbed run's archive content, base folder)."""
    base = tmp_path_factory.mktemp("resources")
    env = os.environ | {"PYTHONPATH": str(ROOT), "ASMEVO_CACHE_DIR": str(base / "cache")}
    cfg = write_config(base / "c.toml", generations=12, population=6)
    _asmevo(env, "run", cfg, "--run-dir", base / "reference", "--quiet", check=0)
    return env, cfg, archive_content(base / "reference"), base


def _asmevo(env, *args, check: int | None = None, prefix=()) -> subprocess.CompletedProcess:
    r = subprocess.run([*prefix, sys.executable, "-m", "asmevo.cli", *map(str, args)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=300)
    if check is not None:
        assert r.returncode == check, (r.returncode, r.stdout[-1000:], r.stderr[-3000:])
    return r


def _in_namespace(script: str, env, tmp: Path) -> subprocess.CompletedProcess:
    why = _probe(tmp)
    if why:
        pytest.skip(why)
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                           "set -u\n" + script], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)


def one_error(text: str, command: str, *needles: str) -> str:
    """The single line a refused command prints (and no traceback)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"asmevo {command}: error: "), text[-3000:]
    assert all(n in lines[0] for n in needles), (lines[0], needles)
    return lines[0]


def _resume_matches(env, run_dir: Path, want: dict) -> None:
    _asmevo(env, "resume", run_dir, "--quiet", check=0)
    assert_same_archive(archive_content(run_dir), want)


@pytest.mark.parametrize("size", ["172k", "420k"])
def test_a_disk_that_fills_up_mid_run(setting, tmp_path, size):
    """Full at different points (a blob, the archive's commit): one line, and what was
    committed is a run a resume finishes as if nothing happened."""
    env, cfg, want, _ = setting
    fs, out = tmp_path / "fs", tmp_path / "out"
    fs.mkdir()
    out.mkdir()
    r = _in_namespace(f"""
        mount -t tmpfs -o size={size} tmpfs {fs}
        {sys.executable} -m asmevo.cli run {cfg} --run-dir {fs}/run --quiet > {out}/stdout
        echo $? > {out}/rc
        cp -a {fs}/run {out}/run
        """, env, tmp_path)
    assert (out / "rc").read_text().strip() == "2", r.stderr[-3000:]
    line = one_error(r.stderr, "run", str(fs / "run"))
    assert "No space left on device" in line or "disk is full" in line, line
    _resume_matches(env, out / "run", want)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_a_read_only_run_directory(setting, tmp_path):
    """A run killed at generation 2 on a filesystem then remounted read-only: resume,
    report and a new run there are one line each and change nothing; made writable
    again, the resume ends with an undisturbed run's archive."""
    env, cfg, want, _ = setting
    fs, out = tmp_path / "fs", tmp_path / "out"
    fs.mkdir()
    out.mkdir()
    py = sys.executable
    r = _in_namespace(f"""
        mount -t tmpfs -o size=64m tmpfs {fs}
        {py} -m tests.engine.killable run {cfg} {fs}/run committed 2 1 > {out}/killed.out
        echo $? > {out}/killed.rc
        cp -a {fs}/run {out}/before
        mount -o remount,ro {fs}
        {py} -m asmevo.cli resume {fs}/run 2> {out}/resume.err; echo $? > {out}/resume.rc
        {py} -m asmevo.cli report {fs}/run 2> {out}/report.err; echo $? > {out}/report.rc
        {py} -m asmevo.cli run {cfg} --run-dir {fs}/new 2> {out}/run.err; echo $? > {out}/run.rc
        cp -a {fs}/run {out}/after
        mount -o remount,rw {fs}
        {py} -m asmevo.cli resume {fs}/run --quiet 2> {out}/again.err; echo $? > {out}/again.rc
        cp -a {fs}/run {out}/run
        """, env, tmp_path)
    rc = lambda name: (out / f"{name}.rc").read_text().strip()
    assert rc("killed") == str(128 + signal.SIGKILL), r.stderr[-2000:]
    for name, command, path in (("resume", "resume", fs / "run"), ("report", "report", fs / "run"),
                                ("run", "run", fs / "new")):
        assert rc(name) == "2", (name, (out / f"{name}.err").read_text())
        one_error((out / f"{name}.err").read_text(), command, str(path), "Read-only file system")
    assert _tree(out / "after") == _tree(out / "before")
    assert rc("again") == "0", (out / "again.err").read_text()
    assert_same_archive(archive_content(out / "run"), want)


def _no_override_reason() -> str | None:
    if not shutil.which("setpriv"):
        return "no setpriv (util-linux)"
    if os.geteuid() != 0:
        return None                          # not root: permissions apply already
    r = subprocess.run(["setpriv", *NO_OVERRIDE, "true"], capture_output=True, text=True)
    return None if r.returncode == 0 else f"setpriv cannot drop capabilities ({r.stderr[:100]})"


def _readonly_tree(root: Path, on: bool) -> None:
    for p in [root, *root.rglob("*")]:
        mode = p.stat().st_mode
        p.chmod(mode & ~0o222 if on else mode | stat.S_IWUSR)


def test_an_unwritable_run_directory_mid_run(setting, tmp_path):
    """The run directory loses its write permission while the search runs (root's override
    dropped, so permissions apply): the next file it makes is refused, one line; the
    resume is refused the same way; with the permission back, it ends as an undisturbed
    run would."""
    why = _no_override_reason()
    if why:
        pytest.skip(why)
    env, cfg, want, _ = setting
    run_dir = tmp_path / "run"
    prefix = ["setpriv", *NO_OVERRIDE] if os.geteuid() == 0 else []
    proc = subprocess.Popen([*prefix, sys.executable, "-m", "asmevo.cli", "run", str(cfg),
                             "--run-dir", str(run_dir)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for line in proc.stdout:
        if line.startswith("gen 2/"):
            _readonly_tree(run_dir, True)
            break
    rest, err = proc.communicate(timeout=300)
    try:
        assert proc.returncode == 2, (proc.returncode, rest[-500:], err[-3000:])
        one_error(err, "run", str(run_dir), "Permission denied")
        refused = _asmevo(env, "resume", run_dir, prefix=prefix)
        assert refused.returncode == 2
        one_error(refused.stderr, "resume", str(run_dir), "Permission denied")
    finally:
        _readonly_tree(run_dir, False)
    _resume_matches(env, run_dir, want)
