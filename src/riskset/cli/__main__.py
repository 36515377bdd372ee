"""``python -m riskset.cli``: the ``riskset`` command."""
import sys

from riskset.cli import main

sys.exit(main())
