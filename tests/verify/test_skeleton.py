"""``asmevo spec init`` / ``spec check``, and the zero-filled ``pad`` argument kind."""
from __future__ import annotations

import re
import shutil
import tomllib

import pytest

from asmevo.cli import main
from asmevo.targets.amdgpu.kernargs import KernargError, pack
from asmevo.targets.amdgpu import load
from asmevo.verify.skeleton import check, skeleton
from asmevo.launch.spec import SpecError, load_spec
from tests.conftest import KERNELS, ROOT

MXFP4 = ROOT / "tests" / "data" / "aiter_gfx950" / \
    "fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128.co"
VECTOR = KERNELS / "vector_add"


def fill(text: str, values: dict[str, dict[str, str]], top: dict[str, str]) -> str:
    """Replace TODO lines: ``values[arg name][key]`` inside [[args]], ``top[key]`` outside."""
    out, arg = [], None
    for line in text.splitlines():
        m = re.match(r'name = "(.*)"', line)
        if m and out and out[-1 if not out[-1].startswith("#") else -2].startswith("[[args]]"):
            arg = m.group(1)
        k = re.match(r'([\w.]+) = .*"TODO"', line)
        if k:
            table = values.get(arg, {}) if arg else top
            if k.group(1) in table:
                line = f"{k.group(1)} = {table[k.group(1)]}"
        if line.startswith("[params]") or line.startswith("[sizes.small]"):
            line = line.split("#")[0] + "\n" + top.get(line.split("]")[0] + "]", "")
        out.append(line)
    return "\n".join(out) + "\n"


def test_aiter_skeleton_lists_every_kernarg_with_pads():
    co = load(MXFP4)
    k = co.kernels[0]
    doc = tomllib.loads(skeleton(co, None, code_object_ref=MXFP4.name))
    explicit = k.meta.explicit_args
    assert len(doc["args"]) == len(explicit) > 40
    for a, m in zip(doc["args"], explicit):
        assert a["offset"] == m.offset
        if m.name == "pad":
            assert a["kind"] == "pad" and a["size"] == m.size
    assert sum(a["kind"] == "pad" for a in doc["args"]) == sum(m.name == "pad" for m in explicit)
    names = [a["name"] for a in doc["args"]]
    assert len(set(names)) == len(names)
    assert doc["launch"]["block"] == k.meta.raw[".reqd_workgroup_size"]
    assert doc["kernel"] == k.name and doc["name"] == \
        "fmoe_bf16_pertokenMXfp4_g1u1_flat_novs_silu_16x128"


def test_check_lists_every_todo_one_line_each(tmp_path, capsys, monkeypatch):
    shutil.copy(MXFP4, tmp_path)
    monkeypatch.chdir(tmp_path)              # `asmevo spec init X.co > spec.toml`, here
    assert main(["spec", "init", MXFP4.name]) == 0
    spec = tmp_path / "spec.toml"
    spec.write_text(capsys.readouterr().out)
    assert f'code_object = "{MXFP4.name}"' in spec.read_text()
    n_todo = sum(ln.split("#")[0].count('"TODO"') for ln in spec.read_text().splitlines())
    assert main(["spec", "check", str(spec)]) == 2
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln for ln in lines if not ln.endswith(": TODO")] == []
    assert len(lines) == n_todo
    assert any("launch.grid[0]: TODO" in ln for ln in lines)
    assert any(re.search(r"args\[\d+\] \(\w+\)\.count: TODO", ln) for ln in lines)


def _filled_vector_add(tmp_path, **change):
    shutil.copy(VECTOR / "vector_ops.gfx942.co", tmp_path)
    shutil.copy(VECTOR / "reference.py", tmp_path)
    co = load(tmp_path / "vector_ops.gfx942.co")
    text = skeleton(co, "vector_add", code_object_ref="vector_ops.gfx942.co")
    buf = {"dtype": '"float32"', "count": '"N"', "init": '"normal"', "output": "false"}
    text = fill(text, {"arg_0": buf, "arg_8": buf, "arg_16": buf | {"output": "true"},
                       "arg_24": {"dtype": '"int32"', "value": '"N"'}},
                {"[params]": "N = 4096", "[sizes.small]": "N = 4000",
                 "grid": '["cdiv(N, 256)", 1, 1]', "block": "[256, 1, 1]"})
    text = text.replace('block = ["TODO", 1, 1]', "block = [256, 1, 1]")
    text = text.replace('TODO = "a range or list per size parameter (replace this line)"',
                        "N = { low = 1, high = 1048576 }")
    for old, new in change.items():
        text = text.replace(old, new)
    spec = tmp_path / "spec.toml"
    spec.write_text(text.replace('name = "arg_0"', 'name = "a"').replace(
        'name = "arg_8"', 'name = "b"').replace('name = "arg_16"', 'name = "c"').replace(
        'name = "arg_24"', 'name = "n"'))
    return spec


def test_filled_skeleton_checks_clean_and_runs(tmp_path):
    spec = _filled_vector_add(tmp_path)
    assert check(spec) == []
    from asmevo.emu import Emulator
    from asmevo.launch.spec import make_inputs
    s = load_spec(spec, "small")
    inputs = make_inputs(s, 0)
    res = Emulator(s.code_object).launch(s, inputs).raise_for_status()
    want = s.reference()(inputs)["c"]          # float64 sums; the kernel adds in float32
    assert (res.outputs["c"] == want.astype("float32")).all()


def test_check_names_each_disagreement(tmp_path):
    spec = _filled_vector_add(tmp_path, **{"offset = 8\n": "offset = 12\n",
                                           "block = [256, 1, 1]": "block = [128, 2, 1]"})
    problems = check(spec)
    assert any("args[1] (b): offset 12, the metadata says 8" in p for p in problems)
    assert any("work-item ids x only" in p for p in problems)
    assert all("\n" not in p for p in problems)


def test_pad_kind_is_zero_filled(tmp_path):
    spec = _filled_vector_add(tmp_path)
    text = spec.read_text()
    # vector_add's 4-byte int argument as a pad: the kernel then sees n = 0
    text = re.sub(r'name = "n"\nkind = "scalar"\noffset = 24\nsize = 4\ndtype = "int32"\n'
                  r'value = "N"', 'name = "n"\nkind = "pad"\noffset = 24\nsize = 4', text)
    spec.write_text(text)
    s = load_spec(spec)
    k = load(s.code_object).kernel("vector_add")
    raw = pack(k, s, {}, {"a": 0x1000, "b": 0x2000, "c": 0x3000})
    assert raw[24:28] == bytes(4) and raw[:8] == (0x1000).to_bytes(8, "little")
    spec.write_text(text.replace("size = 4", "size = 8"))
    with pytest.raises(KernargError, match="pad n is 8 bytes in the spec but 4"):
        pack(k, load_spec(spec), {}, {"a": 0, "b": 0, "c": 0})
    spec.write_text(text.replace("size = 4\n", ""))
    with pytest.raises(SpecError, match="a pad needs size"):
        load_spec(spec)


def test_init_errors_are_one_line(tmp_path, capsys):
    assert main(["spec", "init", str(VECTOR / "vector_ops.gfx942.co")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "vector_add, vector_scale" in err
    assert main(["spec", "init", str(MXFP4), "--kernel", "nope"]) == 2
    assert "no kernel named 'nope'" in capsys.readouterr().err
