"""The import layers of the product: every import points down (or stays in its layer).

From the bottom:

- **archive** (:mod:`asmevo.archive`, source folder ``archive/``): the population
  store (SQLite, blobs). It stores plain data and imports nothing of the rest of
  asmevo, so the three parts (:data:`ROOTS`) form no cycle: ``asmevo.operators``
  imports the core and ``asmevo.archive``, the core imports ``asmevo.archive``,
  ``asmevo.archive`` imports neither.
- **values**: plain data every stage shares and the small helpers under them:
  errors, knobs, files, process, lifetime, the verdict of a candidate
  (:mod:`asmevo.verdict`), the launch spec and its checks (:mod:`asmevo.launch`),
  edits (:mod:`asmevo.edits`). They import nothing above this layer, so a
  target, the emulator and a device can all speak them.
- **targets**: one package per ISA family (load, recover, edit, gate, rebuild,
  patch). Mechanisms that never run a kernel.
- **emulator**: the CPU emulator of the GFX9 family; it reads AMDGPU code
  objects (targets) and runs launches. Inside it, from the bottom: its errors
  and float rules (:mod:`asmevo.emu.numerics`), the machine state instructions
  act on (:mod:`asmevo.emu.machine`), the instruction semantics and the decoder
  (:mod:`asmevo.emu.isa`), running launches (:mod:`asmevo.emu.run`), and the
  public entry points (:mod:`asmevo.emu` itself, the ``emulate`` command).
- **timing**: the CDNA timing model (:mod:`asmevo.timing`): modeled cycles of a
  launch from the emulator's wave traces.
- **prove**: translation validation (:mod:`asmevo.prove`): symbolic semantics of
  the GFX9 instructions, checked against the emulator, and the proofs that an
  edit keeps K0's function. It reads targets (liveness, effects) and runs the
  emulator; verify calls it.
- **devices**: where a code object runs (emulator, hip, cuda), behind one
  Device protocol.
- **profile**: where time goes in a kernel, from the timing model or rocprof,
  and the hot windows ranked from it (:mod:`asmevo.profile`).
- **verify**: the candidate pipeline that judges an edit (gate, build,
  differential run, timing).
- **operator contract** (:mod:`asmevo.operator`): what an operator receives
  and answers, and the registry by name. asmevo never imports ``asmevo.operators``:
  the concrete operators register themselves into the contract, and the
  registry finds their modules through the ``asmevo.operators`` entry points.
- **engine** and **operators**: the search that decides, the operators that
  propose.
- **commands**: ablations, the archive viewer, the profile command.
- **cli**: the ``asmevo`` command on top.

:data:`LAYERS` is that order as data; ``tests/test_layers.py`` walks the AST of
every module (imports at module level and inside functions alike) and fails on
any import that points up a layer, on any import cycle between modules and on
any cycle between the three parts.
A module or package that is in no layer fails the test too: a new one is
placed here on purpose.
"""
from __future__ import annotations

# Bottom first. Each entry: (layer name, module prefixes). A module belongs to the
# layer of its longest matching prefix; "asmevo" names the package's __init__ only.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("archive", ("asmevo.archive",)),
    ("values", ("asmevo", "asmevo.layers", "asmevo.errors", "asmevo.knobs", "asmevo.files",
                "asmevo.process", "asmevo.lifetime", "asmevo.verdict", "asmevo.launch",
                "asmevo.edits", "asmevo.jsontext")),
    ("targets", ("asmevo.targets",)),
    ("emulator numerics", ("asmevo.emu.errors", "asmevo.emu.numerics")),
    ("emulator machine", ("asmevo.emu.machine",)),
    ("emulator isa", ("asmevo.emu.isa",)),
    ("emulator run", ("asmevo.emu.run",)),
    ("emulator", ("asmevo.emu",)),
    ("timing", ("asmevo.timing",)),
    ("prove", ("asmevo.prove",)),
    ("devices", ("asmevo.runtime",)),
    ("profile", ("asmevo.profile",)),
    ("verify", ("asmevo.verify",)),
    ("operator contract", ("asmevo.operator",)),
    ("engine", ("asmevo.engine", "asmevo.operators")),
    ("commands", ("asmevo.ablate", "asmevo.serve", "asmevo.profile_command",
                  "asmevo.hip_command", "asmevo.api")),
    ("cli", ("asmevo.cli", "asmevo.__main__")),
)

# The source folders the layers cover and the package each one is (setup.cfg's
# package_dir; asmevo/__init__.py maps the same in a checkout run without installing).
SOURCES = {"asmevo": "asmevo", "operators": "asmevo.operators", "archive": "asmevo.archive"}

# The three parts that must not import each other in a circle: the core (asmevo, less the
# other two), the operators and the archive.
ROOTS = tuple(SOURCES.values())


def part_of(module: str) -> str:
    """The part of :data:`ROOTS` that ``module`` (dotted name) belongs to."""
    return max((r for r in ROOTS if module == r or module.startswith(r + ".")), key=len)


def layer_of(module: str) -> int | None:
    """Index into :data:`LAYERS` of ``module`` (dotted name), or ``None`` if unplaced."""
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            covers = module == p or (p != "asmevo" and module.startswith(p + "."))
            if covers and len(p) > best:
                best, found = len(p), i
    return found
