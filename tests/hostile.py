"""Shared by the hostile-input tests: run the CLI in-process, write TOML, mutate documents.

:func:`run_cli` is what a user sees: the exit code and the stderr lines of
``asmevo ...``, with anything that escapes :func:`asmevo.cli.main` (what would be
a traceback) or takes longer than a wall-clock bound (a hang) reported as such.
:func:`mutations` is a hypothesis strategy over edits of a parsed TOML document:
keys deleted, values replaced by hostile ones (huge, negative, NaN, wrong types,
deep nesting, injection strings), unknown keys added, tables replaced by scalars.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import os
import re
import signal
from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from asmevo.cli import main


def fuzz_settings(examples: int = 60) -> settings:
    """Deterministic examples in the suite; ``ASMEVO_FUZZ_EXAMPLES=N`` explores N random
    ones instead (a longer hunt, run by hand)."""
    explore = os.environ.get("ASMEVO_FUZZ_EXAMPLES")
    return settings(max_examples=int(explore or examples), deadline=None,
                    derandomize=explore is None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Hang(Exception):
    """The command ran past its wall-clock bound."""


@dataclass
class Outcome:
    code: int | None
    stdout: str
    stderr: str
    escaped: BaseException | None = None      # an exception main() let through
    hung: bool = False

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.stderr.splitlines() if ln.strip()]


def run_cli(argv: list[str], *, seconds: float = 30.0) -> Outcome:
    """``asmevo argv`` in this process, bounded by ``seconds`` of wall clock."""
    out, err = io.StringIO(), io.StringIO()

    def alarm(*_):
        raise Hang(f"asmevo {' '.join(argv)} ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        return Outcome(code, out.getvalue(), err.getvalue())
    except Hang:
        return Outcome(None, out.getvalue(), err.getvalue(), hung=True)
    except BaseException as exc:     # noqa: BLE001 - this is what the test looks for
        return Outcome(None, out.getvalue(), err.getvalue(), escaped=exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def assert_clean(outcome: Outcome, command: str) -> None:
    """Success, "ran, answer is no" (1), or one line on stderr and exit 2; never a
    traceback or a hang."""
    assert not outcome.hung, f"hang: {outcome.stderr[-500:]}"
    assert outcome.escaped is None, f"traceback: {outcome.escaped!r}"
    assert outcome.code in (0, 1, 2), outcome.code
    if outcome.code == 2:
        lines = outcome.error_lines
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"asmevo {command}: error: "), lines


PWNED = "/tmp/asmevo-pwned"                # what the injection strings below try to create


def checked(argv: list[str], *, seconds: float = 60.0) -> Outcome:
    """:func:`run_cli`, then :func:`assert_clean`, and no injected command ran."""
    outcome = run_cli(argv, seconds=seconds)
    assert_clean(outcome, argv[0])
    assert not os.path.exists(PWNED), "an injected command ran"
    return outcome


# -- TOML ----------------------------------------------------------------------------------

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):                   # a JSON string is a TOML basic string, but for
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")  # DEL, pairs
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v).__name__)


def toml_key(k: str) -> str:
    return k if _BARE.fullmatch(k) else toml_value(k)


def toml_text(doc: dict) -> str:
    """``doc`` as TOML: scalars first, then one ``[table]`` per table, arrays inline."""
    lines = [f"{toml_key(k)} = {toml_value(v)}" for k, v in doc.items()
             if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"\n[{toml_key(k)}]")
            lines += [f"{toml_key(a)} = {toml_value(b)}" for a, b in v.items()]
    return "\n".join(lines) + "\n"


# -- mutations -----------------------------------------------------------------------------

def _deep(depth: int, leaf=1):
    v = leaf
    for i in range(depth):
        v = [v] if i % 2 else {"a": v}
    return v


HOSTILE_NUMBERS = [0, -1, 1, 2, 255, 2 ** 31, 2 ** 32, 2 ** 40, 2 ** 63 - 1, 2 ** 63, 2 ** 64,
                   10 ** 12, -(2 ** 63), 1.5, -0.0, 0.5, 1e8, 3e8, 1e12, 1e308, -1e308,
                   float("nan"), float("inf"), float("-inf")]
HOSTILE_STRINGS = ["", "x", "N", "ROWS", "9**9**9", "(-8)**0.5", "min()", "max(1)", "cdiv(1)",
                   "cdiv(N, 0)", "N // 0", "2**64", "10**10", "1e999", "1e8", "3e8", "N * N * N",
                   "2**-1", "-N", f"__import__('os').system('touch {PWNED}')",
                   "().__class__.__base__", "lambda: 1", "1 if 1 else 2", "[1, 2]", "N" * 3000,
                   "-" * 900 + "1", "(" * 300 + "1" + ")" * 300, "'; DROP TABLE runs; --",
                   "../../../../etc/passwd", "/etc/passwd", "/dev/zero", "a\nb", "é", "\u0000",
                   "float32", "buffer", "scalar", "null", "int32", "uint64", "bfloat16", "randint",
                   "tcp://", "tcp://127.0.0.1:1", "emulator", "hip", "nvidia", "large", "small",
                   "instruction-count", "measured"]
HOSTILE_OTHER = [True, False, [], [1], [1, 2, 3, 4], ["N", "N"], {}, {"a": 1}, {"weight": 1e9},
                 _deep(40), _deep(41), [[[]]], [float("nan")], list(range(50))]

hostile_values = st.one_of(st.sampled_from(HOSTILE_NUMBERS), st.sampled_from(HOSTILE_STRINGS),
                           st.sampled_from(HOSTILE_OTHER).map(copy.deepcopy),
                           st.integers(-2 ** 70, 2 ** 70),
                           st.floats(allow_nan=True, allow_infinity=True),
                           st.text(st.characters(codec="utf-8"), max_size=20))


def _paths(v, prefix=()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, prefix + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += _paths(x, prefix + (i,))
    return out


def _parent(doc, path):
    for p in path[:-1]:
        doc = doc[p]
    return doc


@st.composite
def mutated(draw, doc: dict, max_edits: int = 3) -> dict:
    """A copy of ``doc`` with 1..max_edits hostile edits."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, max_edits))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, last = _parent(doc, path), path[-1]
        kind = draw(st.sampled_from(["delete", "replace", "replace", "replace", "add", "wrap"]))
        if kind == "delete":
            del parent[last]
        elif kind == "replace":
            parent[last] = draw(hostile_values)
        elif kind == "wrap":
            parent[last] = [parent[last]]
        else:
            target = parent[last] if isinstance(parent[last], dict) else doc
            target[draw(st.sampled_from(["bogus", "count", "offset", "value", "grid", "x y",
                                         "evaluations", "weight", "é"]))] = draw(hostile_values)
    return doc


@st.composite
def damaged_text(draw, text: str) -> str:
    """TOML text cut short or with a few characters inserted (mostly invalid TOML)."""
    if draw(st.booleans()):
        return text[:draw(st.integers(0, len(text)))]
    at = draw(st.integers(0, len(text)))
    insert = draw(st.sampled_from(INSERTS))
    return text[:at] + insert + text[at:]


INSERTS = ["[", "]", "=", '"', "\n[[args]]\n", "\x00", "é", "= =", "{", "'" * 3,
           "\ndeep = " + "[" * 600 + "]" * 600 + "\n",
           "\ndeep = " + "{a = " * 600 + "1" + "}" * 600 + "\n"]
