"""What a worker on another machine gets: the run's files as bytes, unpacked under their
content hash, and the same evaluator reading them there; candidates isolated in a
daemonic process (every worker process of a standard Dask deployment is one)."""
from __future__ import annotations

import hashlib
import multiprocessing as mp

import pytest

from tests.engine.helpers import KERNELS


def _evaluator(spec: str, kernel: str | None = None):
    from asmevo.engine.evaluator import VerifyEvaluator
    from asmevo.launch.spec import load_spec
    from asmevo.verify.evaluate import EvalContext
    s = load_spec(KERNELS / spec, "small")
    ctx = EvalContext(spec_path=str(KERNELS / spec), size="small",
                      code_object=str(s.code_object))
    sha = hashlib.sha256(s.code_object.read_bytes()).hexdigest()
    return VerifyEvaluator(ctx, kernel or s.kernel, str(s.code_object), sha, "key")


def test_a_reference_brings_the_sibling_it_imports(tmp_path):
    """aiter_pa's reference.py imports ../aiter_ref.py through its own path: the bundle
    holds it at the same place relative to the reference, and nothing else of the
    corpus; unpacked elsewhere, the evaluator reads only the unpacked copies."""
    from asmevo.engine.shipping import pack
    bundle = pack(_evaluator("aiter_pa"))
    names = [rel for rel, _ in bundle.files]
    assert names == ["aiter_pa/pa_bf16_noquant_gqa8_1tg_4w.co", "aiter_pa/reference.py",
                     "aiter_pa/spec.toml", "aiter_ref.py"]
    assert dict(bundle.files)["aiter_ref.py"] == (KERNELS / "aiter_ref.py").read_bytes()
    root = bundle.unpack(tmp_path / "cache")
    assert root.name == bundle.sha256 and bundle.unpack(tmp_path / "cache") == root
    moved = bundle.evaluator(root)
    assert all(p.startswith(str(root)) for p in moved.inputs())
    assert moved.context.spec_path == str(root / "aiter_pa")
    moved.check()                       # the reference imports its sibling from the copy
    # what it reads travels: a reference that imports a missing sibling is refused here
    (root / "aiter_ref.py").unlink()
    with pytest.raises(Exception, match="aiter_ref"):
        moved.check()


def test_the_bundle_names_its_content(tmp_path):
    """Same files, same name; one byte changed, another name; a path that would leave
    the bundle's folder is refused as the bundle is unpacked."""
    from asmevo.engine.shipping import Bundle, ShippingError, pack
    a, b = pack(_evaluator("vector_add")), pack(_evaluator("vector_add"))
    assert a.sha256 == b.sha256 and a.size > 0
    changed = Bundle(tuple((rel, data + b"#" if rel.endswith(".py") else data)
                           for rel, data in a.files), a.relative)
    assert changed.sha256 != a.sha256
    with pytest.raises(ShippingError, match="leaves its folder"):
        Bundle((("../escape.py", b""),), a.relative).unpack(tmp_path / "cache")
    assert not (tmp_path / "escape.py").exists()


def _isolated_in_a_daemon(queue) -> None:
    from asmevo.verify.isolate import Worker, run_isolated
    out = []
    for method in ("fork", "spawn"):
        w = Worker(method)
        try:
            out.append(w.call(sum, [1, 2], timeout=60))
        finally:
            w.close()
        out.append(run_isolated(sum, [3, 4], timeout=60, method=method))
    queue.put(out)


def test_candidates_are_isolated_inside_a_daemonic_process():
    """multiprocessing refuses children to a daemonic process (a nanny's Dask worker):
    the isolation children start without it, forked and spawned alike."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_isolated_in_a_daemon, args=(q,), daemon=True)
    p.start()
    try:
        assert q.get(timeout=120) == [3, 7, 3, 7]
    finally:
        p.join(30)
    assert p.exitcode == 0
