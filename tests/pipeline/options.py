"""Roll-up options shared by the pipeline tests (windows of 10 min, balanced under 10 points for 5 min)."""

from emulator.pipeline.rollup import RollupOptions

SWEEP_OPTIONS = RollupOptions(window=600.0, balance_bound=10.0, balance_minutes=5.0)
