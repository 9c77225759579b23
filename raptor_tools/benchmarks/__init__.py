"""Benchmarks that print figures (never timed assertions in tests)."""
