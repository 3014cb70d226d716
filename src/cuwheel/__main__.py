"""``python -m cuwheel``."""

import sys

from cuwheel.cli import main

sys.exit(main())
