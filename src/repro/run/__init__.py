"""`repro run`: every stage of the pipeline in order, resumable, with a plan printed first."""

from repro.run.pipeline import STAGE_NAMES, STAGES, RunOptions, exit_code_of, run_pipeline

__all__ = ["STAGES", "STAGE_NAMES", "RunOptions", "exit_code_of", "run_pipeline"]
