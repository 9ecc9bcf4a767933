"""Every corpus kernel (each of its code objects) at its small size matches its
numpy reference: exactly for integer outputs, within the spec's tolerance otherwise."""
from pathlib import Path

import numpy as np
import pytest

from asmevo.emu import run_launch
from asmevo.verify.spec import load_spec, make_inputs, values_f64

KERNELS = Path(__file__).resolve().parents[2] / "experiments" / "kernels"


def _cases():
    out = []
    for spec_path in sorted(KERNELS.glob("*/spec.toml")):
        spec = load_spec(spec_path, "small")
        out.append(pytest.param(spec_path, None, id=f"{spec.name}-gfx942"))
        for target in sorted(spec.code_objects):
            out.append(pytest.param(spec_path, target, id=f"{spec.name}-{target}"))
    return out


@pytest.mark.parametrize("spec_path,target", _cases())
def test_corpus_kernel_matches_reference(spec_path, target):
    spec = load_spec(spec_path, "small")
    inputs = make_inputs(spec, 0)
    res = run_launch(spec.code_object_for(target), spec, inputs)
    assert res.status == "ok", res.message
    ref = spec.reference()({k: (v.copy() if isinstance(v, np.ndarray) else v)
                            for k, v in inputs.items()})
    dtypes = {a.name: a.dtype for a in spec.args}
    for name, want in ref.items():
        got = np.asarray(res.outputs[name])
        want = np.asarray(want)
        values = values_f64(dtypes[name], got)     # bfloat16 carriers compare as numbers
        if spec.exact or (got.dtype.kind in "iu" and dtypes[name] != "bfloat16"):
            np.testing.assert_array_equal(values, want.astype(np.float64), err_msg=name)
        else:
            np.testing.assert_allclose(values, want.astype(np.float64),
                                       rtol=spec.rtol, atol=spec.atol, err_msg=name)
    assert res.instructions_executed > 0 and res.lane_instructions > 0
    prof = res.profile[spec.kernel]
    assert prof.counts.sum() == res.instructions_executed
