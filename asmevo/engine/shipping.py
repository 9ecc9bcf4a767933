"""What a worker on another machine needs to judge candidates, as bytes.

A Dask worker shares no filesystem with the run: K0, the spec and its
``reference.py`` (and whatever that imports beside it: ``aiter_ref.py`` one folder
up, say) travel as a :class:`Bundle`, the files' bytes under paths relative to
their common folder, named by the hash of their content. The worker unpacks it
once into a folder of its own named by that hash, and judges candidates with the
same evaluator reading the files there (:meth:`Bundle.evaluator`).

Which files: those the evaluator names (:meth:`Evaluator.inputs`), and for each
Python file among them the files its import reads (found by importing it in a
fresh interpreter that records every file opened), less the Python installation
and asmevo itself, which every worker has installed. A file a reference opens
only when it is called, not as it is imported, is not found: open it (or import
what opens it) at import.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from asmevo import knobs
from asmevo.errors import AsmevoError
from asmevo.files import read_input
from asmevo.memo import cached


class ShippingError(AsmevoError):
    """A file the workers need that cannot be read, or a bundle that cannot be unpacked."""


@dataclass(frozen=True)
class Bundle:
    """Files by path relative to their common folder, and the evaluator that reads
    them with its paths relative to that folder too."""

    files: tuple[tuple[str, bytes], ...]
    relative: object                    # the evaluator, its paths relative

    @property
    def sha256(self) -> str:
        """The content's name: each path with the hash of its bytes."""
        h = hashlib.sha256()
        for rel, data in self.files:
            h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
        return h.hexdigest()

    @property
    def size(self) -> int:
        return sum(len(data) for _, data in self.files)

    def unpack(self, base: str | Path) -> Path:
        """The bundle's folder under ``base`` (``<base>/<sha256>``), written once:
        a folder of that name is the same content, so it is used as it is."""
        root = Path(base) / self.sha256
        if root.is_dir():
            return root
        tmp = Path(base) / f".{self.sha256}.{os.getpid()}.tmp"
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            for rel, data in self.files:
                path = tmp / _safe(rel)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            os.replace(tmp, root)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if root.is_dir():           # another process of this machine was first
                return root
            raise ShippingError(f"cannot unpack the run's files ({exc.strerror or exc})",
                                path=str(root)) from exc
        return root

    def evaluator(self, root: Path):
        """The evaluator reading the files unpacked at ``root``."""
        return self.relative.moved(lambda rel: str(root / _safe(rel)))


def _safe(rel: str) -> PurePosixPath:
    p = PurePosixPath(rel)
    if p.is_absolute() or ".." in p.parts:
        raise ShippingError(f"a bundle path that leaves its folder: {rel!r}")
    return p


def pack(evaluator) -> Bundle:
    """The files ``evaluator`` reads (and what its Python files import), relative to
    their common folder, with the evaluator moved there."""
    named = [Path(p).resolve() for p in evaluator.inputs()]
    found = list(dict.fromkeys(named + [f for p in named if p.suffix == ".py"
                                        for f in imported_files(p)]))
    top = Path(os.path.commonpath([str(p.parent) for p in found]))

    def relative(path: str) -> str:
        p = Path(path).resolve()
        if not p.is_relative_to(top):
            raise ShippingError(f"{p} is outside the files shipped to workers ({top})")
        return p.relative_to(top).as_posix()
    files = tuple(sorted((relative(str(p)), read_input(p, error=ShippingError,
                                                        what="file the workers need"))
                         for p in found))
    return Bundle(files, evaluator.moved(relative))


_PROBE = r"""
import importlib.util, os, sys
seen = []
def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        seen.append(os.path.abspath(os.fsdecode(args[0])))
path = sys.argv[1]
name = "asmevo_ref_" + os.path.basename(os.path.dirname(path))
spec = importlib.util.spec_from_file_location(name, path)
module = importlib.util.module_from_spec(spec)
sys.addaudithook(hook)
spec.loader.exec_module(module)
sys.stdout.write("\0".join(seen))
"""


def imported_files(path: Path) -> list[Path]:
    """The regular files importing ``path`` reads beyond the installation (a sibling
    module, a table it loads), found in a fresh interpreter that records each file
    opened (the audit hook's ``open`` event) while the module runs."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE, str(path)], env=env,
                              capture_output=True, timeout=knobs.REFERENCE_SECONDS.value,
                              cwd=path.parent)
    except subprocess.TimeoutExpired:
        raise ShippingError(f"importing it ran past {knobs.REFERENCE_SECONDS.value:,} s "
                            f"(set {knobs.REFERENCE_SECONDS.env} to allow more)",
                            path=str(path)) from None
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines() or ["no message"]
        raise ShippingError(f"cannot import it to find what it reads ({lines[-1]})",
                            path=str(path))
    out = []
    for name in dict.fromkeys(proc.stdout.decode(errors="surrogateescape").split("\0")):
        p = Path(name)
        if name and p.is_file() and not _installed(p) and "__pycache__" not in p.parts:
            out.append(p.resolve())
    return out


def _package_folders() -> dict[str, Path]:
    """Where asmevo and its two subpackages with source folders of their own
    (asmevo.operators, asmevo.archive) are: inside asmevo/ when installed from a wheel,
    beside it in a checkout. Found without importing the two."""
    import importlib.util

    import asmevo
    out = {"": Path(asmevo.__file__).resolve().parent}
    for name in ("operators", "archive"):
        spec = importlib.util.find_spec(f"asmevo.{name}")
        if spec is not None and spec.submodule_search_locations:
            out[name] = Path(list(spec.submodule_search_locations)[0]).resolve()
    return out


@cached("engine.shipping.fingerprint", 1)
def fingerprint() -> str:
    """The hash of asmevo's own files as installed here (its Python sources and package
    data, asmevo.operators and asmevo.archive included wherever their folders are): a
    worker whose asmevo differs from the run's could judge a candidate differently, so
    it is told apart before it judges any. The same files give the same hash from a
    checkout and from a wheel."""
    folders = _package_folders()
    nested = {f for name, f in folders.items() if name}
    files = {}
    for name, top in folders.items():
        for p in top.rglob("*"):
            if name == "" and any(f in p.parents or f == p for f in nested):
                continue                # a wheel's asmevo/operators: counted under its name
            if p.suffix in (".py", ".toml", ".c") and "__pycache__" not in p.parts \
                    and p.is_file():
                files[PurePosixPath(name, p.relative_to(top).as_posix()).as_posix()] = p
    h = hashlib.sha256()
    for rel, p in sorted(files.items()):
        h.update(rel.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


def _installed(path: Path) -> bool:
    """Whether ``path`` is part of what every worker has installed: Python, its
    site-packages, asmevo (with asmevo.operators and asmevo.archive)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             *sysconfig.get_paths().values(), *site.getsitepackages(),
             site.getusersitepackages(), *map(str, _package_folders().values())}
    p = str(path.resolve())
    return any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in roots if r)
