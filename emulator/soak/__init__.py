"""The seeded fault soak: random scenarios from a seed (`generate`), each run in a child process and
checked (`check`); `python -m emulator.soak --seeds 1-200 --jobs 2` runs it."""

from .check import SeedResult as SeedResult
from .check import run_seed as run_seed
from .generate import generate as generate
from .generate import scenario_toml as scenario_toml

__all__ = ["SeedResult", "generate", "run_seed", "scenario_toml"]
