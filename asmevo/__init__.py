"""asmevo: evolve compiled GPU kernels at the assembly level, with proof of equivalence.

Everything is imported under this one name. Two of its subpackages live in source
folders beside this one: ``asmevo.operators`` is ``operators/`` and ``asmevo.archive`` is
``archive/`` (setup.cfg's ``package_dir``; an installed wheel has them inside
``asmevo/``). Run from a checkout without installing (``python3 -m asmevo`` at its root),
the two are mapped in here: :class:`_SiblingFinder` answers for exactly those two names,
and only where the folder sits beside ``asmevo/`` and ``asmevo/`` has no subpackage of
that name. Their submodules then come from the folder as from any package.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__version__ = "0.1.0"

# subpackage name -> source folder beside asmevo/ (setup.cfg's package_dir says the same)
SOURCE_FOLDERS = {"operators": "operators", "archive": "archive"}


class _SiblingFinder:
    """Finds ``asmevo.operators`` / ``asmevo.archive`` in the checkout's source folders."""

    def __init__(self, folders: dict[str, Path]):
        self.folders = folders

    def find_spec(self, fullname, path=None, target=None):
        folder = self.folders.get(fullname)
        if folder is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, folder / "__init__.py", submodule_search_locations=[str(folder)])


def _map_source_folders() -> None:
    here = Path(__file__).resolve().parent
    folders = {f"{__name__}.{name}": here.parent / folder
               for name, folder in SOURCE_FOLDERS.items()
               if not (here / name).exists() and (here.parent / folder / "__init__.py").is_file()}
    if folders and not any(isinstance(f, _SiblingFinder) and f.folders == folders
                           for f in sys.meta_path):
        sys.meta_path.insert(0, _SiblingFinder(folders))


_map_source_folders()
