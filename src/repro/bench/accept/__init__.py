"""`repro accept`: the drafter's acceptance length per prompt set. The run (runner), its
non-streaming `/generate` requests (client), the numbers (stats) and the run folder written as
each set ends (record)."""
