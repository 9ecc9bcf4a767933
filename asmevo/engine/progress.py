"""The live view of a run: evaluations, accepted, best per island, spend, ETA.

On a terminal one status line is redrawn as evaluations arrive and a summary
line is kept per generation; otherwise (a log file, CI) it prints plain lines,
one per generation, that can be grepped.
"""
from __future__ import annotations

import sys
import time
from typing import TextIO

from asmevo.engine.budget import fraction_done


def _clock(seconds: float) -> str:
    s = int(max(0, seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    """An engine hook: ``Engine(..., hooks=(Progress(config),))``."""

    def __init__(self, config, stream: TextIO | None = None, tty: bool | None = None):
        self.config = config
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else tty
        self.evaluated = 0         # this session, for the live line
        self.accepted = 0
        self.generation = 0
        self.best_per_island: list[float] = []
        self._t0 = time.monotonic()
        self._wall0 = 0.0

    def _write(self, text: str, *, live: bool = False) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K" + text + ("" if live else "\n"))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def __call__(self, event: str, info: dict) -> None:
        if event == "start":
            self._wall0 = info["spent"].wall_seconds
            self._write(f"run {self.config.run.name}: starting at generation "
                        f"{info['generation']}/{self.config.engine.generations}")
            problems = info.get("k0_problems") or ()
            if problems:
                self._write(f"note: K0 itself has {len(problems)} static-check problem"
                            f"{'s' if len(problems) > 1 else ''} (candidates are refused only "
                            f"for new ones): {problems[0]}"
                            + (f"; and {len(problems) - 1} more" if len(problems) > 1 else ""))
        elif event == "preflight":
            for line in info["lines"]:
                self._write(f"pre-flight: {line}")
        elif event == "generation_start":
            self.generation = info["generation"]
        elif event == "evaluated" and self.tty:
            self.evaluated += 1
            self.accepted += info["evaluation"].verdict.equal
            self._write(f"gen {self.generation}: {self.evaluated} evaluated this session, "
                        f"{self.accepted} accepted", live=True)
        elif event == "committed":
            self._write(self.line(info["result"], info["state"]))
        elif event == "finished":
            st = info["state"]
            best = st.hall_of_fame[0].fitness if len(st.hall_of_fame) else 0.0
            label = {"measured": "measured", "none": "unlabeled"}.get(self.config.run.timing,
                                                                      "modeled")
            head = f"finished ({info['reason']}): {st.spent.evaluations} evaluations; "
            if best > 1.0:
                self._write(head + f"best speedup {best:.4f}x ({label}, bit-equal to K0)")
            elif info.get("why"):
                self._write(head + f"no speedup found ({label}): {info['why']}")
            else:
                self._write(head + f"no speedup found: no verified candidate was faster than "
                            f"K0 ({label})")

    def line(self, result, state) -> str:
        cfg = self.config
        accepted = state.spent.accepted
        best = " ".join(f"{b:.3f}" for b in result.best_per_island)
        spent = state.spent
        f = fraction_done(cfg.budget, spent, result.generation, cfg.engine.generations)
        eta = spent.wall_seconds * (1 - f) / f if f > 0 else 0.0
        dollars = f"  ${spent.llm_dollars:.2f}" if spent.llm_dollars or cfg.budget.llm_dollars \
            else ""
        return (f"gen {result.generation}/{cfg.engine.generations}  evals {spent.evaluations}"
                f" (+{result.fresh})  accepted {accepted}  best/island {best}{dollars}"
                f"  {'migrated  ' if result.migrated else ''}elapsed {_clock(spent.wall_seconds)}"
                f"  eta {_clock(eta)}")
