"""``python -m qmckit …`` is the ``qmckit`` command."""
import sys

from .cli import main

sys.exit(main())
