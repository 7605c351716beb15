"""``python -m taunotebook``: the ``taunotebook`` command."""

import sys

from .cli import main

sys.exit(main())
