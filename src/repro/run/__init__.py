"""`repro run`: every stage of the pipeline in order, resumable, with a plan printed first."""

from repro.run.pipeline import STAGES, RunOptions, run_pipeline

__all__ = ["STAGES", "RunOptions", "run_pipeline"]
