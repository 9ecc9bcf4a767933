"""``python -m asmevo``: the same as the ``asmevo`` command."""
import sys

from asmevo.cli import main

sys.exit(main())
