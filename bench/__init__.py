"""Benchmarks: `python -m bench` (grows with the benchmarks issue)."""
