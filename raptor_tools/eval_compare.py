"""`raptor eval ... --compare old.json`: this run against an earlier one, question by question.

Each score is paired by question id (questions only one run asked are left out), and the mean
difference is given with a 95% confidence interval from a paired bootstrap (resampling the questions,
fixed seed): an interval that excludes 0 is a difference the questions support, one that spans 0 is not.
How many questions scored higher and lower is given too: on sets of 10-90 questions a mean difference of
several points is often two or three questions moving all the way (docs/EVALUATION.md, "Small budgets:
where the 500-token context's points went"), which the interval alone does not show.
"""

from __future__ import annotations

from typing import Any

import numpy as np

RESAMPLES = 2000
SEED = 0
MOVED = 1e-9  # a question's score counts as higher or lower past this (scores are rounded to 4 places)
# (label, where the score sits in a per-question record)
COMPARED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("answer R-1 recall", ("methods", "collapsed", "extractive", "answer_rouge1_recall")),
    ("first-quote R-1 recall", ("methods", "collapsed", "extractive", "first_quote_rouge1_recall")),
    ("answer token F1", ("methods", "collapsed", "extractive", "answer_f1")),
    ("reference in the quotes", ("methods", "collapsed", "extractive", "answer_contains")),
    ("context R-1 recall, collapsed", ("methods", "collapsed", "rouge1_recall")),
    ("context R-1 recall, traversal", ("methods", "traversal", "rouge1_recall")),
    ("context R-1 recall, leaves only", ("methods", "leaves", "rouge1_recall")),
)


def _value(record: dict[str, Any], path: tuple[str, ...]) -> float | None:
    """The score at `path` as a number (True/False as 1/0), or None where the record has none."""
    value: Any = record
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return None if value is None else float(value)


def paired(old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The old and new scores of the questions both runs scored, in the new run's order."""
    before = {r["question_id"]: _value(r, path) for r in old.get("per_question", [])}
    pairs = [
        (before[r["question_id"]], _value(r, path))
        for r in new.get("per_question", [])
        if before.get(r["question_id"]) is not None and _value(r, path) is not None
    ]
    if not pairs:
        return np.zeros(0), np.zeros(0)
    a, b = zip(*pairs, strict=True)
    return np.asarray(a, dtype=float), np.asarray(b, dtype=float)


def bootstrap_interval(
    differences: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean difference over question resamples."""
    if len(differences) == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(differences), size=(resamples, len(differences)))
    means = differences[picks].mean(axis=1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def compare_reports(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per score: questions paired, old and new means, the difference and its 95% interval."""
    rows = []
    for label, path in COMPARED:
        before, after = paired(old, new, path)
        if not len(before):
            continue
        differences = after - before
        low, high = bootstrap_interval(differences)
        rows.append(
            {
                "score": label,
                "questions": len(before),
                "old": round(float(before.mean()), 4),
                "new": round(float(after.mean()), 4),
                "difference": round(float(differences.mean()), 4),
                "ci95": [round(low, 4), round(high, 4)],
                "higher": int((differences > MOVED).sum()),
                "lower": int((differences < -MOVED).sum()),
            }
        )
    return rows


def render_comparison(rows: list[dict[str, Any]], old_name: str) -> str:
    """The comparison as a Markdown table."""
    if not rows:
        return f"Nothing to compare with {old_name}: no question was scored by both runs."
    lines = [
        f"Against {old_name} (paired by question; 95% CI by bootstrap over questions):",
        "",
        "| score | questions | old | new | difference | 95% CI | higher / lower |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        low, high = row["ci95"]
        lines.append(
            f"| {row['score']} | {row['questions']} | {row['old']:.3f} | {row['new']:.3f} "
            f"| {row['difference']:+.3f} | [{low:+.3f}, {high:+.3f}] | {row.get('higher', 0)} / {row.get('lower', 0)} |"
        )
    return "\n".join(lines)
