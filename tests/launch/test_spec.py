import numpy as np
import pytest

from asmevo.targets.amdgpu import load
from asmevo.launch.spec import SpecError, evaluate, load_spec, make_inputs, spec_sizes
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



def test_spec_sizes_lists_the_named_sizes_and_names_the_file_it_refuses(tmp_path):
    p = tmp_path / "spec.toml"
    p.write_text('name="x"\nkernel="k"\ncode_object="k.co"\n[launch]\ngrid=[1]\nblock=[64]\n'
                 '[sizes.small]\nN=1\n[sizes.medium]\nN=2\n')
    assert spec_sizes(tmp_path) == ("small", "medium")
    p.write_text('name="x"\n[sizes.small\n')
    with pytest.raises(SpecError, match="invalid TOML") as exc:
        spec_sizes(p)
    assert exc.value.path == str(p)
    p.write_text('name="x"\nsizes=3\n')
    with pytest.raises(SpecError) as exc:
        spec_sizes(p)
    assert exc.value.path == str(p)


_HEAD = ('name="x"\nkernel="k"\ncode_object="k.co"\n[params]\nN=100\n'
         '[launch]\ngrid=[1]\nblock=[64]\n')


def _spec(tmp_path, args: str):
    p = tmp_path / "spec.toml"
    p.write_text(_HEAD + args)
    return load_spec(p)


@pytest.mark.parametrize("arg,message", [
    ('domain = "N"', "expected a list of values or"),
    ('domain = []', "a list needs 1 to 64 values"),
    ('domain = [1, 2.5]', "int32 needs an integer"),
    ('domain = [1, 5000000000]', "does not fit int32"),
    ('domain = {low = 5, high = 1}', "low 5 is above high 1"),
    ('domain = {low = 1}', "a range needs both low and high"),
    ('domain = {low = 1, high = 9, step = 2}', "unknown key"),
    ('domain = {low = 1, high = 9}', "value 100 is not in its domain"),
    ('domain = {low = 1, high = "M"}', "unknown parameter 'M'"),
])
def test_bad_scalar_domains_name_the_file_and_key(tmp_path, arg, message):
    with pytest.raises(SpecError, match=message) as err:
        _spec(tmp_path, f'[[args]]\nname="n"\nkind="scalar"\nvalue="N"\n{arg}\n')
    assert str(tmp_path / "spec.toml") in str(err.value) and "args[0].domain" in str(err.value)


def test_domains_and_their_draws(tmp_path):
    from asmevo.launch.spec import scalar_values
    spec = _spec(tmp_path, '[[args]]\nname="n"\nkind="scalar"\nvalue="N"\n'
                           'domain={low=1, high="N"}\n'
                           '[[args]]\nname="a"\nkind="scalar"\ndtype="float32"\nvalue=1.5\n'
                           'domain=[1.5, -2.0, 0.0]\n')
    n, a = spec.args
    assert (n.domain.low, n.domain.high) == (1, 100) and a.domain.values == (1.5, -2.0, 0.0)
    assert scalar_values(spec, 0) == {"n": 100, "a": 1.5}           # seed 0: the spec's values
    draws = [scalar_values(spec, s) for s in (1, 2, 3)]
    assert [d["a"] for d in draws] == [-2.0, 0.0, 1.5]              # the list, walked
    assert draws[1]["n"] == 1 and all(1 <= d["n"] <= 100 for d in draws)
    assert draws[0]["n"] % 64 and 75 <= draws[2]["n"] < 100          # a partial tail; near high
    assert make_inputs(spec, 2)["n"] == 1


@pytest.mark.parametrize("arg,message", [
    ('kind="buffer"\ncount=4\noutput=true\ninout=true', "only a buffer that is not an output"),
    ('kind="scalar"\ninout=true', "only a buffer"),
    ('kind="buffer"\ncount=4\ndomain=[1]', "only scalars have a domain"),
    ('kind="buffer"\ncount=4\ninout=1', "inout: must be true or false"),
    ('kind="buffer"\ncount=4\nspecial="no"', "special: must be true or false"),
])
def test_bad_buffer_keys(tmp_path, arg, message):
    with pytest.raises(SpecError, match=message):
        _spec(tmp_path, f'[[args]]\nname="b"\n{arg}\n')


def test_carried_float_fills_are_values_not_bit_counts(tmp_path):
    from asmevo.launch.dtypes import decode
    for dtype in ("bfloat16", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3fn",
                  "float8_e5m2", "float16"):
        spec = _spec(tmp_path, f'[[args]]\nname="b"\nkind="buffer"\ndtype="{dtype}"\n'
                               'count=4096\ninit="normal"\n')
        vals = decode(make_inputs(spec, 0)["b"], dtype)
        assert np.isfinite(vals).all() and 0.7 < vals.std() < 1.3, dtype
        assert (vals < 0).mean() > 0.4 and np.abs(vals).max() > 2.0, dtype


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float8_e4m3fnuz", "int8",
                                   "int32"])
@pytest.mark.parametrize("init", ["normal", "uniform", "randint", "arange", "ones"])
def test_a_large_buffer_drawn_in_chunks_holds_the_same_values(dtype, init):
    import numpy as np
    from asmevo.launch.spec import ArgSpec, _fill
    a = ArgSpec(name="x", kind="buffer", dtype=dtype, count=1000, init=init)
    whole = _fill(a, np.random.default_rng([5, 7919, 0]), chunk=10**6)
    parts = _fill(a, np.random.default_rng([5, 7919, 0]), chunk=37)
    assert parts.dtype == whole.dtype and parts.tobytes() == whole.tobytes()
    assert init in ("ones",) or len(set(whole.tobytes())) > 2    # values, not one constant
