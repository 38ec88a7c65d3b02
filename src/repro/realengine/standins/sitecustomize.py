"""Loads repro's CPU-test import stand-ins in every Python process of the engine's environment.

Python imports ``sitecustomize`` at start-up from the first folder on ``sys.path`` that has it,
so SGLang's spawned scheduler and detokenizer processes get the stand-ins too.
"""

import repro_standins

repro_standins.install()
