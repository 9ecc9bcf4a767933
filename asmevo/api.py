"""asmevo from Python: the four things a script does, in one place (docs/python_api.md).

* :func:`load` a code object (its kernels, ABI and instructions);
* :func:`verify` a candidate against K0 at every launch of a spec's family, and time it;
* :func:`search` (an island-model search from a config, into a run directory);
* :func:`open_archive` (a run's archive, read-only, with :mod:`asmevo.archive.queries` beside it).

These are the functions the command line uses (``inspect``, ``verify``, ``run``,
``report``), so a script and the command give the same answers. Errors are the
command's too: an :class:`~asmevo.errors.AsmevoError` (or the archive's
:class:`~asmevo.archive.errors.ArchiveError`) with the file and the reason.
"""
from __future__ import annotations

from pathlib import Path

from asmevo.archive import queries                    # noqa: F401  (re-exported: api.queries)
from asmevo.archive.store import Archive
from asmevo.runtime.registry import DEFAULT_DEVICE
from asmevo.targets import DEFAULT_TARGET
from asmevo.verdict import Evaluation


def load(path: str | Path, *, target: str = DEFAULT_TARGET):
    """The code object at ``path`` (``.kernel_names``, ``.kernel(name)``, ``.target``)."""
    from asmevo.targets import get_target
    from asmevo.files import read_input

    data = read_input(Path(path), what="code object")
    return get_target(target).load(data, path=str(path))


def verify(spec: str | Path, k0: str | Path, k1: str | Path, *, size: str = "small",
           device: str = DEFAULT_DEVICE, target: str = DEFAULT_TARGET) -> Evaluation:
    """K1 against K0 under the spec's launches (as ``asmevo verify``): ``.verdict``
    (``.equal``, ``.status``, ``.reason``, ``.details``) and ``.timing`` (``.speedup``,
    ``.label``: *modeled* on the emulator, *measured* on a GPU) where it is equal."""
    from asmevo.files import read_input
    from asmevo.verify.evaluate import EvalContext, evaluate_code
    from asmevo.runtime.registry import default_timing

    ctx = EvalContext(spec_path=str(spec), size=size, code_object=str(k0), device=device,
                      timing=default_timing(device), target=target)
    return evaluate_code(ctx, read_input(Path(k1), what="code object"))


def search(config: str | Path, run_dir: str | Path) -> str:
    """Run the search ``config`` (a TOML file, as ``asmevo run``) into the new run
    directory ``run_dir``, quietly; the reason it stopped. Resume with ``asmevo resume``."""
    from asmevo.engine.command import search as drive
    from asmevo.engine.rundir import create_run

    with create_run(config, run_dir) as run:
        return drive(run)


def open_archive(run_dir: str | Path) -> Archive:
    """A run's archive, read-only (nothing in ``run_dir`` changes, even while the run
    writes): pass it to :mod:`asmevo.archive.queries` (``queries.individuals``,
    ``queries.best_individual``, ``queries.operator_stats``, ...). Close it when done
    (or use it in a ``with`` block)."""
    return Archive(Path(run_dir) / "archive.db", readonly=True)
