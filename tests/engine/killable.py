"""A run in a child process that SIGKILLs itself at a chosen engine event.

``python -m tests.engine.killable run CONFIG RUN_DIR [EVENT GENERATION NTH]``
``python -m tests.engine.killable resume RUN_DIR [EVENT GENERATION NTH]``

The kill is a real ``SIGKILL`` of this process (no cleanup, no atexit, open
transaction abandoned): the same as ``kill -9`` from outside, but at an exact
point of the generation. Every event is also printed, so the parent can kill
from outside at a moment of its choosing. ``ASMEVO_TEST_DIE`` kills one of its
workers instead (tests/engine/dying.py).
"""
from __future__ import annotations

import os
import signal
import sys


def main(argv: list[str]) -> int:
    from asmevo.engine.command import open_engine
    from asmevo.engine.rundir import create_run, open_run

    mode, *rest = argv
    config, run_dir, *kill = rest if mode == "run" else [None, *rest]
    target = (kill[0], int(kill[1]), int(kill[2])) if kill else None
    seen: dict[tuple[str, int], int] = {}

    def hook(event: str, info: dict) -> None:
        g = info.get("generation", -1)
        seen[(event, g)] = seen.get((event, g), 0) + 1
        print(f"event {event} {g} {seen[(event, g)]}", flush=True)
        if target and target == (event, g, seen[(event, g)]):
            os.kill(os.getpid(), signal.SIGKILL)

    run = create_run(config, run_dir) if mode == "run" else open_run(run_dir)
    from tests.engine.dying import from_environment
    from_environment(run)
    engine = open_engine(run, (hook,))
    engine.run()
    engine.pool.close()
    run.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
