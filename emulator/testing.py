"""Test helpers for users' own async integration tests (filled in by the cluster work)."""
