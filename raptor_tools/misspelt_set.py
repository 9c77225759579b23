"""A copy of an evaluation set whose questions are misspelt, to measure what mistyped questions cost.

`python -m raptor_tools.misspelt_set ../shared/evaldata/qasper /tmp/typo/qasper` writes the set's
documents as they are and each question with one typing slip in its longest content word, and in its
second longest when it has three or more (`grounding_variants.misspelt`: a doubled letter, a dropped one
or a swapped pair, chosen by a hash of the word, so the copy is the same every time). Question ids are
kept, so `raptor eval COPY --compare RUN.json` pairs each misspelt question with the question as written.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from raptor_tools.grounding_variants import misspelt


def write_misspelt_set(source: Path, target: Path) -> int:
    """Copy the set at `source` to `target` with its questions misspelt; returns how many changed."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "documents.jsonl", target / "documents.jsonl")
    changed = 0
    with (source / "questions.jsonl").open(encoding="utf-8") as read, (target / "questions.jsonl").open(
        "w", encoding="utf-8"
    ) as write:
        for line in read:
            question = json.loads(line)
            slipped = misspelt(question["question"])
            if slipped is not None:
                question["question"], changed = slipped, changed + 1
            write.write(json.dumps(question, ensure_ascii=False) + "\n")
    return changed


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="a set's folder (documents.jsonl, questions.jsonl)")
    parser.add_argument("target", type=Path, help="where to write the misspelt copy")
    args = parser.parse_args(argv)
    print(f"{write_misspelt_set(args.source, args.target)} questions misspelt, in {args.target}")


if __name__ == "__main__":
    main()
