"""`python -m repro.sim <sglang server args>`."""

import sys

from repro.sim import main

sys.exit(main())
