"""Tooling around the RAPTOR pipeline: benchmarks, robustness checks, retrieval evaluation and metrics."""
