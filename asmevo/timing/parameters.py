"""The timing model's parameters: one TOML table per target family (``params/<family>.toml``).

Every figure the model uses (machine size, issue costs, latencies, cache geometry)
comes from these tables, checked once when a table is loaded so a missing or
malformed key is one precise :class:`TimingError` naming the file, never a
default. Sources of the values: ``docs/timing_model.md``.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from asmevo.emu.errors import EmulatorError
from asmevo.timing.memory import MemoryParams
from asmevo.targets.amdgpu import processors as P

PARAMS_DIR = Path(__file__).with_name("params")


class TimingError(EmulatorError):
    """The timing model cannot model this launch (it does not run, or no parameters)."""

    status = "unsupported"


@dataclass(frozen=True)
class Params:
    """One target family's table, as the model reads it (cycles unless named otherwise)."""

    target: str
    name: str
    compute_units: int
    clock_hz: float
    simds_per_cu: int
    hbm_bytes_per_cycle: float
    l2_bytes_per_cycle_per_cu: float
    lds_bytes_per_cycle: float
    max_workgroups_per_cu: int
    launch_overhead_cycles: int
    workgroup_dispatch_cycles: int
    issue: dict
    latency: dict
    memory: MemoryParams
    quarter_rate: tuple[str, ...] = ()
    device: str = ""                        # the device the table was loaded for
    hbm_efficiency: float = 1.0             # achievable / peak HBM bandwidth
    dispatch_cycles_per_workgroup: float = 0.0   # device-wide: between two workgroups
    calibration: dict = field(default_factory=dict)   # parameter -> relative error
    tag: str = ""                           # names a variant (ensemble member)

    def value(self, name: str) -> float:
        """The parameter ``machine.X`` (a field of this class), ``issue.X``, ``latency.X``
        or ``memory.X``."""
        table, _, key = name.partition(".")
        if table in ("issue", "latency"):
            return float(getattr(self, table)[key])
        if table in ("memory", "machine"):
            return float(getattr(self.memory if table == "memory" else self, key))
        raise TimingError(f"no parameter {name!r}")

    def with_values(self, values: dict[str, float], tag: str) -> "Params":
        """This table with the named parameters (see :meth:`value`) set; setting
        ``machine.clock_hz`` keeps the bandwidths per second. ``tag`` names the variant."""
        issue, lat, mem, top = dict(self.issue), dict(self.latency), {}, {}
        for name, v in values.items():
            table, _, key = name.partition(".")
            self.value(name)                    # an unknown name is an error
            if table == "issue":
                issue[key] = v
            elif table == "latency":
                lat[key] = v
            elif table == "memory":
                mem[key] = type(getattr(self.memory, key))(v)
            elif key == "clock_hz":
                f = v / self.clock_hz
                top.update(clock_hz=v, hbm_bytes_per_cycle=self.hbm_bytes_per_cycle / f)
                mem["mall_bytes_per_cycle"] = self.memory.mall_bytes_per_cycle / f
            else:
                top[key] = type(getattr(self, key))(v)
        mp = replace(self.memory, **(_latency_memory(lat) | mem))
        return replace(self, issue=issue, latency=lat, memory=mp, tag=tag, **top)

    def scaled(self, factors: dict[str, float], tag: str) -> "Params":
        """This table with each named parameter multiplied by its factor."""
        return self.with_values({k: self.value(k) * f for k, f in factors.items()}, tag)


_ISSUE_KEYS = ("slot_cycles", "salu", "valu", "valu_trans", "valu_quarter",
               "mfma_cycles_per_pass", "smem", "vmem", "vmem_ta_bytes_per_cycle",
               "vmem_ta_min_cycles", "lds", "lds_min_cycles", "branch", "branch_taken",
               "waitcnt", "barrier", "nop_cycles_per_count", "sleep_cycles_per_count", "other")
_LATENCY_KEYS = ("vmem_l1_hit", "vmem_l2_hit", "vmem_mall_hit", "vmem_hbm", "smem_hit",
                 "smem_miss", "vmem_store", "lds", "mfma_extra", "trans_extra", "barrier")
_MACHINE_KEYS = ("name", "compute_units", "clock_mhz", "simds_per_cu", "hbm_bytes_per_second",
                 "l2_bytes_per_cycle_per_cu", "lds_bytes_per_cycle", "max_workgroups_per_cu",
                 "launch_overhead_cycles", "workgroup_dispatch_cycles", "hbm_efficiency",
                 "dispatch_cycles_per_workgroup")
_MEMORY_KEYS = ("l1_bytes", "l1_line", "l2_bytes_per_cu", "sector",
                "scalar_bytes_per_cu", "scalar_line", "mall", "mall_bytes_per_second",
                "tag_cycles_per_line", "lds_banks", "lds_conflict_cycles",
                "subdword_lane_cycles", "atomic_lane_cycles")
_DEVICE_KEYS = ("compute_units", "clock_mhz", "hbm_bytes_per_second", "name")


def _latency_memory(lat: dict) -> dict:
    """The latencies MemoryParams carries, from a [latency] table."""
    return {"l1_hit": float(lat["vmem_l1_hit"]), "l2_hit": float(lat["vmem_l2_hit"]),
            "mall_hit": float(lat["vmem_mall_hit"]), "hbm": float(lat["vmem_hbm"]),
            "smem_hit": float(lat["smem_hit"]), "smem_miss": float(lat["smem_miss"])}


def _doc(processor: str) -> tuple[dict, str]:
    path = PARAMS_DIR / P.processor(processor).timing_params
    if not path.exists():
        have = ", ".join(sorted(p.stem for p in PARAMS_DIR.glob("*.toml")))
        raise TimingError(f"no timing-model parameters for {processor}; have: {have}",
                          path=str(path))
    doc = tomllib.loads(path.read_text())
    where = str(path)
    for table, keys in (("machine", _MACHINE_KEYS), ("issue", _ISSUE_KEYS),
                        ("latency", _LATENCY_KEYS), ("memory", _MEMORY_KEYS)):
        missing = [k for k in keys if k not in doc.get(table, {})]
        if missing:
            raise TimingError(f"[{table}] lacks {', '.join(missing)}", path=where)
    mem = doc["memory"]
    for key in ("l1_line", "sector", "scalar_line"):
        v = mem[key]
        if not (isinstance(v, int) and v >= 4 and v & (v - 1) == 0):
            raise TimingError(f"[memory] {key} = {v!r} is not a power of two >= 4", path=where)
    if mem["l1_line"] < mem["sector"]:
        raise TimingError("[memory] l1_line is smaller than sector", path=where)
    return doc, where


def devices(processor: str) -> tuple[str, ...]:
    """The devices ``processor``'s table names (``[devices.NAME]``), the default first."""
    doc, _ = _doc(processor)
    names = list(doc.get("devices", {}))
    default = doc["machine"].get("device")
    return tuple(([default] if default in names else []) + [n for n in names if n != default])


@lru_cache(maxsize=16)
def load_params(processor: str, device: str | None = None) -> Params:
    """The parameter table of ``processor`` (gfx940/941 share gfx942's) on ``device``: one
    of its ``[devices.NAME]`` tables (compute units, clock, HBM bandwidth of that part;
    the CU-level parameters are the family's), the table's default device when None."""
    doc, where = _doc(processor)
    m, mem, lat = dict(doc["machine"]), doc["memory"], doc["latency"]
    devs = doc.get("devices", {})
    name = device or m.get("device") or ""
    if name:
        if name not in devs:
            raise TimingError(f"no device {name!r} in the {P.family(processor)} table; have: "
                              f"{', '.join(devs) or 'none'}", path=where)
        bad = sorted(set(devs[name]) - set(_DEVICE_KEYS))
        if bad:
            raise TimingError(f"[devices.{name}] has unknown keys {', '.join(bad)}", path=where)
        m.update(devs[name])
    clock = float(m["clock_mhz"]) * 1e6
    issue = {k: doc["issue"][k] for k in _ISSUE_KEYS}
    mp = MemoryParams(
        int(mem["l1_bytes"]), int(mem["l1_line"]), int(mem["l2_bytes_per_cu"]),
        int(mem["sector"]), int(mem["scalar_bytes_per_cu"]),
        int(mem["scalar_line"]), bool(mem["mall"]), float(mem["mall_bytes_per_second"]) / clock,
        float(mem["tag_cycles_per_line"]), int(mem["lds_banks"]),
        float(mem["lds_conflict_cycles"]), subdword_lane_cycles=float(mem["subdword_lane_cycles"]),
        atomic_lane_cycles=float(mem["atomic_lane_cycles"]), **_latency_memory(lat))
    cal = {k: float(v) for k, v in doc.get("calibration", {}).items()}
    return Params(P.family(processor), m["name"], int(m["compute_units"]), clock,
                  int(m["simds_per_cu"]), float(m["hbm_bytes_per_second"]) / clock,
                  float(m["l2_bytes_per_cycle_per_cu"]), float(m["lds_bytes_per_cycle"]),
                  int(m["max_workgroups_per_cu"]), int(m["launch_overhead_cycles"]),
                  int(m["workgroup_dispatch_cycles"]), issue,
                  {k: lat[k] for k in _LATENCY_KEYS}, mp,
                  tuple(doc["issue"].get("quarter_rate", ())), name,
                  float(m["hbm_efficiency"]), float(m["dispatch_cycles_per_workgroup"]), cal)


def ensemble(p: Params, n: int, seed: int = 0) -> list[Params]:
    """``n`` parameter sets drawn within the calibration's error (``[calibration]``: each
    named parameter's relative error, one standard deviation): each factor log-normal
    around 1, seeded, so the same call gives the same sets. Parameters the table does
    not calibrate stay as they are. The first set is ``p`` itself."""
    import numpy as np

    names = sorted(p.calibration)
    if not names:
        return [p]
    rng = np.random.default_rng(seed)
    out = [p]
    for i in range(1, n):
        draws = rng.standard_normal(len(names))
        factors = {k: math.exp(math.log1p(p.calibration[k]) * z) for k, z in zip(names, draws)}
        out.append(p.scaled(factors, f"ensemble{i}"))
    return out
