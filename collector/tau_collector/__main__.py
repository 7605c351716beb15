"""``python -m tau_collector`` runs the command line."""

import sys

from tau_collector.cli import main

sys.exit(main())
