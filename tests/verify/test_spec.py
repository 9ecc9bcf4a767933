import numpy as np
import pytest

from asmevo.targets.amdgpu import load
from asmevo.verify.spec import SpecError, evaluate, load_spec, make_inputs
from tests.conftest import corpus_specs


@pytest.mark.parametrize("path", corpus_specs(), ids=lambda p: p.parent.name)
def test_corpus_specs_load_and_match_their_kernels(path):
    for size in ("default", "small", "large"):
        spec = load_spec(path, size)
        co = load(spec.code_object)
        k = co.kernel(spec.kernel)
        explicit = k.meta.explicit_args if k.meta else ()
        if explicit:
            assert len(explicit) == len(spec.args)
        else:
            assert all(a.offset is not None for a in spec.args)
        assert spec.outputs, "every spec writes at least one buffer"
    inputs = make_inputs(load_spec(path, "small"), seed=1)
    again = make_inputs(load_spec(path, "small"), seed=1)
    for name, v in inputs.items():
        assert np.array_equal(np.asarray(v), np.asarray(again[name]))


def test_expressions():
    assert evaluate("cdiv(N, 256) * 2", {"N": 1000}) == 8
    assert evaluate(7, {}) == 7
    with pytest.raises(SpecError, match="unknown parameter"):
        evaluate("M + 1", {"N": 1})
    with pytest.raises(SpecError, match="unsupported"):
        evaluate("__import__('os')", {})


def test_unknown_keys_and_sizes_are_errors(tmp_path):
    p = tmp_path / "spec.toml"
    p.write_text('name="x"\nkernel="k"\ncode_object="k.co"\nbogus=1\n'
                 '[launch]\ngrid=[1]\nblock=[64]\n')
    with pytest.raises(SpecError, match="unknown key.*bogus"):
        load_spec(p)
    p.write_text('name="x"\nkernel="k"\ncode_object="k.co"\n[launch]\ngrid=[1]\nblock=[64]\n')
    with pytest.raises(SpecError, match="no size 'huge'"):
        load_spec(p, "huge")
    p.write_text('name="x"\nkernel="k"\ncode_object="k.co"\n[launch]\ngrid=[1]\nblock=[64]\n'
                 '[[args]]\nname="a"\nkind="buffer"\ndtype="float33"\ncount=4\n')
    with pytest.raises(SpecError, match="unknown dtype"):
        load_spec(p)
