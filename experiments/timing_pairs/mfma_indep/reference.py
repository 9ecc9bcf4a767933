import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("mfma_ref", Path(__file__).parents[1] / "mfma_ref.py")
mfma_ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mfma_ref)


def reference(args: dict) -> dict:
    return {"y": mfma_ref.mfma_chain(args["x"], dependent=False)}
