"""Launch the inference server: here, repro's simulator with SGLang's command line."""

import sys

from repro.sim import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
