"""Hostile names in real code objects: nothing from the file reaches llvm-mc as code.

Each variant is a committed corpus object whose string tables (symbols, sections,
metadata) were given a hostile string: a second statement after a newline
(``.include``/``.incbin`` of a secret file outside the run directory), quotes,
``;``, ``#``, a block end, non-ASCII, very long names. ``inspect``, ``roundtrip``
and an edited build run on every variant through a wrapper llvm-mc that keeps
every ``.s`` it is handed, and each kept text is checked statement by statement:
only directives asmevo itself writes, only plain instruction lines. Under strace
the secret files are never opened, and their contents appear nowhere. Renamed
labels come back in the rebuilt symbol table byte for byte.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import msgpack
import pytest

from asmevo.cli import main
from asmevo.edits import Edit
from asmevo.targets.amdgpu import load, recover
from asmevo.targets.amdgpu import toolchain as tcmod
from asmevo.targets.amdgpu.build import build_program
from asmevo.targets.amdgpu.edits import apply_edit
from asmevo.targets.amdgpu.names import IDENTIFIER
from asmevo.targets.amdgpu.roundtrip import compare
from asmevo.targets.amdgpu.sanitize import check_line
from tests.conftest import KERNELS, ROOT
from tests.targets.amdgpu.elfedit import (rename_section, rename_symbol, replace_amdgpu_note,
                                          retype_symbol, symbols)

ASM_COPY = KERNELS / "asm_copy" / "asm_copy.gfx942.co"      # labels label_002C, label_0070
VECTOR = KERNELS / "vector_add" / "vector_ops.gfx942.co"     # HIP: several kernels

# directives asmevo writes; anything else in a .s handed to llvm-mc is a failure
OURS = {".amdgcn_target", ".amdhsa_code_object_version", ".text", ".rodata", ".byte", ".long",
        ".globl", ".local", ".type", ".p2align", ".amdhsa_kernel", ".end_amdhsa_kernel",
        ".amdgpu_metadata"}


@pytest.fixture(scope="module")
def secret(tmp_path_factory):
    """A file outside every run directory, named by the hostile strings."""
    d = tmp_path_factory.mktemp("outside")
    f = d / "secret.txt"
    f.write_text("SENTINEL-7f3a9c\n")
    return f


def _hostile_strings(secret: Path) -> dict[str, bytes]:
    s = str(secret).encode()
    return {
        "include": b'x\n.include "' + s + b'"\ny',
        "local_include": b'.Lx\n.include "' + s + b'"\ny',
        "incbin": b'q\n  .incbin "' + s + b'"',
        "quote": b'la"bel',
        "semicolon": b"lab;el",
        "hash": b"# 1 \"" + s + b"\"",
        "set": b"a\n.set s0, 1",
        "block_end": b"\n.end_amdgpu_metadata\n.incbin \"" + s + b"\"",
        "cyrillic": "\u0455".encode(),
        "latin1": b"\xff\xfe",
        "register": b"s0",
        "kernel_twin": b"asm_copy",
        "dotl": b".Lfine",
        "one_byte": b";",
        "long_valid": b"L" * 100_000,
        "long_hostile": b"\n.include \"" + s + b"\"" + b"\n" * 50_000,
    }


@pytest.fixture(scope="module")
def wrapped(tmp_path_factory):
    """An ASMEVO_LLVM_DIR whose llvm-mc keeps a copy of every .s (file or stdin)."""
    real = tcmod.find_toolchain()
    d = tmp_path_factory.mktemp("llvm")
    log = tmp_path_factory.mktemp("seen")
    for t in tcmod.TOOLS:
        if t != "llvm-mc":
            os.symlink(real.path(t), d / t)
    (d / "llvm-mc").write_text(f"""#!/bin/sh
n="{log}/$$.$(date +%s%N)"
for a in "$@"; do case "$a" in *.s) cp "$a" "$n.s"; exec "{real.path('llvm-mc')}" "$@";; esac; done
tee "$n.stdin.s" | "{real.path('llvm-mc')}" "$@"
""")
    (d / "llvm-mc").chmod(0o755)
    return d, log


@pytest.fixture
def use_wrapper(wrapped, monkeypatch):
    d, log = wrapped
    for f in log.iterdir():
        f.unlink()
    monkeypatch.setenv("ASMEVO_LLVM_DIR", str(d))
    tcmod._find.cache_clear()
    yield log
    tcmod._find.cache_clear()


def _statements_ok(text: str, stdin: bool) -> None:
    """Every statement llvm-mc would see is one asmevo writes (see module docstring)."""
    assert text.isascii(), "non-ASCII text reached llvm-mc"
    in_meta = False
    for n, line in enumerate(text.split("\n"), 1):
        stmt = line.strip()
        assert "\r" not in line and "\0" not in line
        if in_meta:
            if stmt.startswith(".end_amdgpu_metadata"):
                assert stmt == ".end_amdgpu_metadata", f"line {n}: {line!r}"
                in_meta = False
            continue
        if not stmt:
            continue
        if stdin:      # an edit's lines, encoded one per line
            check_line(stmt)
            continue
        word = stmt.split(None, 1)[0]
        if word.endswith(":") and " " not in stmt:
            name = word[:-1]
            name = json.loads(name) if name.startswith('"') else name
            assert IDENTIFIER.match(name), f"line {n}: label {name!r}"
        elif word.startswith("."):
            assert word in OURS or word.startswith(".amdhsa_"), f"line {n}: {line!r}"
            if word == ".amdgpu_metadata":
                in_meta = True
            if word in (".globl", ".local", ".type", ".amdhsa_kernel"):
                name = stmt.split(None, 1)[1].split(",")[0]
                name = json.loads(name) if name.startswith('"') else name
                assert IDENTIFIER.match(name), f"line {n}: {line!r}"
            if word == ".long":
                assert re.fullmatch(r"\.long 0x[0-9a-f]{8}(, 0x[0-9a-f]{8})*(  // [ -~]*)?", stmt)
        else:
            check_line(stmt)
    assert not in_meta, "metadata block not closed by asmevo's own end line"


def _check_seen(log: Path) -> int:
    seen = sorted(log.iterdir())
    for f in seen:
        _statements_ok(f.read_text(errors="replace"), f.name.endswith(".stdin.s"))
    return len(seen)


def _label_variants(secret: Path) -> dict[str, bytes]:
    data = ASM_COPY.read_bytes()
    return {name: rename_symbol(data, b"label_002C", s)
            for name, s in _hostile_strings(secret).items()}


def _metadata_variant(secret: Path) -> bytes:
    co = load(VECTOR)
    doc = json.loads(json.dumps(co.metadata))
    hostile = _hostile_strings(secret)
    k = doc["amdhsa.kernels"][0]
    k[".name"] = hostile["include"].decode()
    k[".args"][0][".name"] = hostile["block_end"].decode()
    k[hostile["block_end"].decode()] = hostile["incbin"].decode()
    k[".end_amdgpu_metadata"] = "x"
    k["\u0455"] = "\u0455"
    return replace_amdgpu_note(VECTOR.read_bytes(), msgpack.packb(doc))


def _variants(secret: Path) -> dict[str, bytes]:
    out = _label_variants(secret)
    out["metadata"] = _metadata_variant(secret)
    hostile = _hostile_strings(secret)
    data = ASM_COPY.read_bytes()
    out["section_rodata"] = rename_section(data, b".rodata", hostile["incbin"])
    out["section_note"] = rename_section(data, b".note", hostile["include"])
    fn = retype_symbol(rename_symbol(data, b"label_0070", hostile["semicolon"]), b"lab;el", 2)
    out["local_function"] = fn
    return out


def test_hostile_labels_round_trip_and_come_back_in_the_symbol_table(secret, use_wrapper):
    """Every label variant rebuilds to K0's .text, descriptors and metadata, and the
    rebuilt .symtab holds exactly K0's names (placeholders restored)."""
    for name, data in _label_variants(secret).items():
        co = load(data, path=f"{name}.co")
        program = recover(co)
        rebuilt = build_program(program, cache=False)
        assert compare(co, load(rebuilt)).identical, name
        assert [n for _, n in symbols(rebuilt)] == [n for _, n in symbols(data)], name
        assert all(IDENTIFIER.match(p) and len(p) == len(o.encode("utf-8", "surrogateescape"))
                   for p, o in program.renamed.items()), name
    assert _check_seen(use_wrapper) >= 2 * len(_label_variants(secret))


def test_cli_on_every_variant_feeds_llvm_mc_only_asmevo_directives(secret, use_wrapper, tmp_path,
                                                                     capsys):
    run = tmp_path / "run"
    run.mkdir()
    outcomes = {}
    for name, data in _variants(secret).items():
        f = run / f"{name}.co"
        f.write_bytes(data)
        for command in ("inspect", "roundtrip"):
            rc = main([command, str(f)])
            cap = capsys.readouterr()
            assert "SENTINEL" not in cap.out + cap.err, name
            assert rc in (0, 1, 2), name
            if rc == 2:
                assert cap.err.count("\n") == 1 and str(f) in cap.err, (name, cap.err)
            outcomes[name, command] = rc
    outcomes = {n: rc for (n, c), rc in outcomes.items() if c == "roundtrip"}
    assert outcomes["metadata"] == 0 and outcomes["section_rodata"] == 0
    assert outcomes["local_function"] == 0
    assert all(outcomes[n] == 0 for n in _label_variants(secret)), outcomes
    assert _check_seen(use_wrapper) > 30


def test_unprintable_kernel_names_are_refused_before_any_assembler(secret, use_wrapper, tmp_path,
                                                                   capsys):
    data = ASM_COPY.read_bytes()
    bad = _hostile_strings(secret)["include"]
    for table in (b".symtab", b".dynsym"):
        data = rename_symbol(data, b"asm_copy", bad, table)
        data = rename_symbol(data, b"asm_copy.kd", bad + b".kd", table)
    f = tmp_path / "kernel.co"
    f.write_bytes(data)
    assert main(["roundtrip", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kernel name 'x\\n.include" in err and str(f) in err
    assert list(use_wrapper.iterdir()) == []


def test_an_edited_build_of_a_hostile_variant_prints_only_checked_lines(secret, use_wrapper):
    data = _label_variants(secret)["include"]
    program = recover(load(data))
    fn = program.functions[0]
    targets = [i.branch_target for i in fn.instructions if i.is_branch]
    target = next(t for t in targets if t in program.renamed)
    assert IDENTIFIER.match(target) and "include" in program.renamed[target]
    i = next(k for k, ins in enumerate(fn.instructions) if ins.mnemonic == "s_endpgm")
    edited = apply_edit(program, Edit(fn.name, i, i, ("s_nop 0", f"s_cbranch_scc0 {target}")))
    rebuilt = build_program(edited, cache=False)
    assert [n for _, n in symbols(rebuilt)] == [n for _, n in symbols(data)]
    _check_seen(use_wrapper)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_no_process_opens_the_secret_files(secret, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    files = []
    for name, data in _variants(secret).items():
        f = run / f"{name}.co"
        f.write_bytes(data)
        files.append(str(f))
    trace = tmp_path / "trace.txt"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat,openat2,execve",
                           "-o", str(trace), sys.executable, "-m", "asmevo", "roundtrip", *files],
                          cwd=run, env=env, capture_output=True, text=True, timeout=600)
    if "ptrace" in proc.stderr and "Operation not permitted" in proc.stderr:
        pytest.skip("ptrace is not permitted here")
    assert proc.returncode in (0, 1, 2), proc.stderr[-2000:]
    text = trace.read_text(errors="replace")
    assert "llvm-mc" in text and "ld.lld" in text          # the tools did run, traced
    assert str(secret.parent) not in text and "/etc/passwd" not in text
    assert "SENTINEL" not in proc.stdout + proc.stderr
