"""The evaluation: metrics on tiny strings with hand-computed values, and `raptor eval` end to end on a
set the test writes itself (two short documents, four questions, one global and one multiple choice)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner

from raptor_engine.cli import cli
from raptor_tools import metrics
from raptor_tools.evaluate import load_eval_set, render_markdown, run_eval
from tests.unhurried import unhurried_settings

# ---- metrics ------------------------------------------------------------------------------


def test_rouge1_recall_counts_each_reference_word_at_most_as_often_as_the_text_has_it():
    # reference tokens: the x2, cat, sat, on, mat (6); the text has one "the" and "cat" -> 2/6
    assert metrics.rouge1_recall("The cat sat on the mat.", "the cat ate") == pytest.approx(2 / 6)
    assert metrics.rouge1_recall("The cat sat on the mat.", "mat on sat cat the the") == 1.0
    assert metrics.rouge1_recall("", "anything") == 0.0
    assert metrics.rouge_tokens("Don't STOP, 1903!") == ["don", "t", "stop", "1903"]


def test_rougeL_recall_needs_the_reference_words_in_order():  # noqa: N802
    # reference: the lamp was lit at dusk (6); the text has "at dusk" and "the ... lamp" but the
    # longest in-order run shared with the reference has 2 tokens -> 2/6; unigram recall is 5/6 ("was" missing)
    reference, text = "the lamp was lit at dusk", "at dusk the keeper lit the lamp"
    assert metrics.rougeL_recall(reference, text) == pytest.approx(2 / 6)
    assert metrics.rouge1_recall(reference, text) == pytest.approx(5 / 6)
    assert metrics.rougeL_recall(reference, "so the lamp was lit at dusk again") == 1.0


def test_bit_parallel_lcs_matches_the_textbook_table():
    def table_lcs(a: list[str], b: list[str]) -> int:
        rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a):
            for j, y in enumerate(b):
                rows[i + 1][j + 1] = rows[i][j] + 1 if x == y else max(rows[i][j + 1], rows[i + 1][j])
        return rows[-1][-1]

    rng = random.Random(3)
    for _ in range(500):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 14))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 30))]
        assert metrics.lcs_length(a, b) == table_lcs(a, b)


def test_token_f1_squad_style():
    # "the" and "a" are dropped: [keeper, lit, lamp] vs [keeper, lit, lamps] -> P = R = 2/3
    assert metrics.token_f1("The keeper lit the lamp.", "a keeper lit lamps") == pytest.approx(2 / 3)
    # [mira, rang, bell] vs [mira, rang, brass, bell, twice, at, noon]: P = 1, R = 3/7 -> F1 = 0.6
    assert metrics.token_f1("Mira rang the bell", "Mira rang the brass bell twice at noon") == pytest.approx(
        0.6
    )
    assert metrics.token_f1("", "") == 1.0 and metrics.token_f1("yes", "") == 0.0
    assert metrics.max_token_f1("no", ["yes", "No."]) == 1.0
    assert metrics.max_token_f1("no", []) is None


def test_parse_choice_reads_letters_only_where_they_are_choices():
    assert metrics.parse_choice("B", 4) == 1
    assert metrics.parse_choice("(c)", 4) == 2
    assert metrics.parse_choice("**D**", 4) == 3
    assert metrics.parse_choice("The answer is C.", 4) == 2
    assert metrics.parse_choice("I think the answer is b", 4) == 1
    assert metrics.parse_choice("E", 4) is None  # only four options
    assert metrics.parse_choice("a spaceship lands", 4) is None
    assert metrics.parse_choice("I cannot tell", 4) is None
    assert metrics.accuracy([1, None, 2], [1, 0, 3]) == pytest.approx(1 / 3)


# ---- a small set ---------------------------------------------------------------------------

HARBOUR = " ".join(
    [
        "Port Aven is a small fishing harbour on a rocky northern coast.",
        "Every day at the harbour office Mira rang the bell at noon to call the boats home.",
        "The fishermen of Port Aven caught herring in the spring and mackerel in the late summer.",
        "Their wooden boats were painted green and yellow so that wives on the cliff could spot them.",
        "A long stone breakwater protected the moorings from the western gales.",
        "In the winter of 1911 a storm wrecked the harbour wall and sank six boats at their moorings.",
        "The town rebuilt the wall with granite from the quarry above the village.",
        "Mira kept the harbour log for thirty years and recorded every boat that left and returned.",
        "Her log shows that the fleet shrank from forty boats to twelve between 1900 and 1950.",
        "Young people left for the cities and the fish market closed in 1962.",
        "Today the harbour holds pleasure yachts and a museum of the old fishing fleet.",
        "Visitors can still hear the harbour bell rung at noon each summer Sunday.",
    ]
)
ORCHARD = " ".join(
    [
        "The Hollin orchard grows apples and pears on a south-facing slope above the river.",
        "Tomas planted the first cider trees there in 1923 after returning from the war.",
        "He grafted old local varieties onto hardy rootstock that could survive the frost.",
        "Bees from four hives pollinate the blossom every April.",
        "The harvest begins in September when the early pears ripen.",
        "Pickers climb wooden ladders and fill canvas bags with fruit.",
        "The best apples are stored in a cool barn lined with straw until the spring.",
        "Windfalls go to the cider press, which still runs on a horse-driven wheel.",
        "In 1976 a drought killed a third of the young trees.",
        "Tomas's granddaughter replanted them with the same old varieties.",
        "The orchard now sells juice, cider and blossom honey at the Saturday market.",
        "Each October the village holds an apple fair under the oldest tree.",
    ]
)
MC_OPTIONS = [
    "A fire burned the fish market",
    "A storm wrecked the harbour wall",
    "The quarry flooded the village",
    "The breakwater was never finished",
]


def write_set(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    docs = [
        {"doc_id": "harbour", "title": "Port Aven", "doc_text": HARBOUR},
        {"doc_id": "orchard", "title": "Hollin orchard", "doc_text": ORCHARD},
    ]
    questions = [
        {  # free-form; best reference 6/8 (brass, twice absent from both documents)
            "doc_id": "harbour",
            "question_id": "h1",
            "question": "Who rang the bell at noon?",
            "answers": ["Nobody knows", "Mira rang the brass bell twice at noon"],
        },
        {  # multiple choice; its reference is the gold option, found verbatim in the text
            "doc_id": "harbour",
            "question_id": "h2",
            "question": "What happened in the winter of 1911?",
            "options": MC_OPTIONS,
            "gold_index": 1,
            "answer": MC_OPTIONS[1],
            "answers": [MC_OPTIONS[1]],
        },
        {  # global: 7 of its 8 tokens appear in the orchard text (all but "family")
            "doc_id": "orchard",
            "question_id": "o1",
            "question": "What is the story about?",
            "scope": "global",
            "answers": ["A family orchard of apples pears and cider"],
        },
        {  # no reference: still retrieved (layer shares) but not scored
            "doc_id": "orchard",
            "question_id": "o2",
            "question": "Why did Tomas plant the trees?",
            "answers": [],
        },
    ]
    with (root / "documents.jsonl").open("w") as f:
        f.writelines(json.dumps(d) + "\n" for d in docs)
    with (root / "questions.jsonl").open("w") as f:
        f.writelines(json.dumps(q) + "\n" for q in questions)
    return root


def test_the_set_texts_have_what_the_hand_computed_values_assume():
    words = set(metrics.rouge_tokens(HARBOUR + " " + ORCHARD))
    assert {"brass", "twice", "nobody", "knows", "family"}.isdisjoint(words)
    assert "mira rang the bell at noon" in HARBOUR.lower()
    assert {"a", "orchard", "of", "apples", "pears", "and", "cider"} <= set(metrics.rouge_tokens(ORCHARD))


def test_load_eval_set_reads_questions_and_refuses_unknown_documents(tmp_path):
    eval_set = load_eval_set(write_set(tmp_path / "tiny"))
    assert eval_set.name == "tiny" and list(eval_set.documents) == ["harbour", "orchard"]
    assert [q.group for q in eval_set.questions] == ["other", "other", "global", "other"]
    assert eval_set.questions[1].multiple_choice and eval_set.questions[1].gold_index == 1
    with (tmp_path / "tiny" / "questions.jsonl").open("a") as f:
        f.write(json.dumps({"doc_id": "missing", "question": "?"}) + "\n")
    from raptor_engine.errors import RaptorError

    with pytest.raises(RaptorError, match="missing"):
        load_eval_set(tmp_path / "tiny")


def _run_cli(set_dir: Path, cache: Path, out: Path, *extra: str):
    result = CliRunner().invoke(
        cli,
        ["eval", str(set_dir), "--data-dir", str(cache), "--out", str(out), "--no-llm", "--quiet", *extra],
    )
    assert result.exit_code == 0, result.output
    return result, json.loads(out.read_text())


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """One CLI run shared by the checks below (trees cost seconds to build)."""
    root = tmp_path_factory.mktemp("evalset")
    set_dir = write_set(root / "tiny")
    result, report = _run_cli(set_dir, root / "cache", root / "out.json")
    return root, set_dir, result, report


def test_eval_command_writes_the_report_and_prints_a_table(cli_run):
    _, _, result, report = cli_run
    assert "| collapsed tree |" in result.stdout and "| leaves only (flat) |" in result.stdout
    assert report["set"] == "tiny" and report["questions"] == 4 and report["global_questions"] == 1
    assert report["settings"]["budget"] == 2000 and report["settings"]["llm"] is None
    assert set(report["trees"]) == {"harbour", "orchard"}
    assert set(report["methods"]) == {"collapsed", "traversal", "leaves"}
    for summary in report["methods"].values():
        assert set(summary["retrieval"]) == {"global", "other", "all"}
        assert summary["retrieval"]["global"]["questions"] == 1
        assert summary["retrieval"]["other"]["questions"] == 2  # o2 has no reference
        assert summary["retrieval"]["all"]["questions"] == 3
        assert sum(summary["layer_token_share"].values()) == pytest.approx(1.0, abs=1e-3)
    assert [r["question_id"] for r in report["per_question"]] == ["h1", "h2", "o1", "o2"]


def test_eval_metrics_match_hand_computed_values(cli_run):
    """The documents are far smaller than the budget, so leaves-only and collapsed contexts hold
    the whole text: recall is fixed by which reference words the text contains at all."""
    _, _, _, report = cli_run
    rows = {r["question_id"]: r["methods"] for r in report["per_question"]}
    for method in ("leaves", "collapsed"):
        # 6 of 8 tokens, all in one sentence in order, so ROUGE-L equals ROUGE-1
        assert rows["h1"][method]["rouge1_recall"] == 0.75
        assert rows["h1"][method]["rougeL_recall"] == 0.75
        assert rows["h2"][method]["rouge1_recall"] == 1.0 and rows["h2"][method]["rougeL_recall"] == 1.0
        assert rows["o1"][method]["rouge1_recall"] == 0.875  # a [family] orchard of apples pears and cider
        assert rows["o2"][method]["rouge1_recall"] is None
        summary = report["methods"][method]["retrieval"]
        assert summary["global"]["rouge1_recall"] == 0.875
        assert summary["other"]["rouge1_recall"] == pytest.approx((0.75 + 1.0) / 2)
        assert summary["all"]["rouge1_recall"] == pytest.approx((0.75 + 1.0 + 0.875) / 3, abs=1e-4)
    leaves = report["methods"]["leaves"]
    assert leaves["layer_token_share"] == {"0": 1.0} and leaves["non_leaf_node_share"] == 0.0
    collapsed = report["methods"]["collapsed"]
    assert collapsed["non_leaf_node_share"] > 0  # summaries fit the budget too
    for row in rows.values():
        assert row["leaves"]["tokens_used"] <= row["collapsed"]["tokens_used"] <= 2000
        assert set(row["leaves"]["nodes_per_layer"]) == {"0"}


async def test_eval_rerun_reuses_trees_and_is_deterministic(cli_run, embedder):
    root, set_dir, _, report = cli_run
    settings = unhurried_settings(data_dir=root / "cache")
    again = await run_eval(set_dir, settings, use_llm=False, embedder=embedder)
    assert json.loads(json.dumps(again)) == report
    fresh = await run_eval(set_dir, unhurried_settings(data_dir=root / "fresh"), use_llm=False, embedder=embedder)
    assert json.loads(json.dumps(fresh)) == report  # the same trees are built from scratch
    limited = await run_eval(set_dir, settings, budget=60, limit=2, use_llm=False, embedder=embedder)
    assert limited["questions"] == 2 and set(limited["trees"]) == {"harbour"}
    for row in limited["per_question"]:
        assert all(m["tokens_used"] <= 60 for m in row["methods"].values())


async def test_llm_scores_from_an_openai_compatible_server(tmp_path, embedder):
    """With an LLM configured, each method's context goes to the model; its replies are graded."""
    from tests.llm_server import FakeLLMServer, default_responder

    def responder(body: dict) -> str:
        system = body["messages"][0]["content"]
        if "multiple-choice" in system:
            return "The answer is B."
        if "as few words as possible" in system:
            return "Mira rang the bell" if "bell" in body["messages"][-1]["content"] else "Apples and plums"
        return default_responder(body)  # the tree's summaries

    set_dir = write_set(tmp_path / "tiny")
    async with FakeLLMServer(responder=responder) as server:
        settings = unhurried_settings(data_dir=tmp_path / "cache", llm_base_url=server.base_url, llm_api_key="test")
        report = await run_eval(set_dir, settings, embedder=embedder)
        answer_requests = [r for r in server.requests if "Context:" in r.text()]
    assert len(answer_requests) == 3 * 3  # h1, h2, o1 (o2 has nothing to grade against), three methods each
    mc_prompt = next(r.text() for r in answer_requests if "Options:" in r.text())
    assert "B. A storm wrecked the harbour wall" in mc_prompt
    for method, summary in report["methods"].items():
        llm = summary["llm"]
        assert llm["mc_questions"] == 1 and llm["mc_accuracy"] == 1.0 and llm["mc_unparsed"] == 0, method
        # h1: 0.6 (see test_token_f1_squad_style); o1: [apples, and, plums] vs
        # [family, orchard, of, apples, pears, and, cider] -> P 2/3, R 2/7, F1 = 0.4
        assert llm["f1_questions"] == 2
        assert llm["f1"] == pytest.approx((0.6 + 0.4) / 2, abs=1e-4)
    assert report["settings"]["llm"] == settings.llm_answer_model


# ---- extractive answers and follow-up conversations ------------------------------------------


def test_answer_scores_read_the_quotes_only():
    from raptor_tools.evaluate import EvalQuestion, score_answer

    question = EvalQuestion("q", "d", "Who rang the bell?", ("Mira rang the bell",))
    answer = (
        "From the documents:\n- \u201cAt noon Mira rang the bell.\u201d [1]\n- \u201cGulls cried.\u201d [2]"
    )
    scored = score_answer(question, answer)
    assert scored["answer_contains"] is True
    assert scored["answer_rouge1_recall"] == 1.0 and scored["first_quote_rouge1_recall"] == 1.0
    # only the quotes count, SQuAD-normalised: [at noon mira rang bell gulls cried] (7) against
    # [mira rang bell] (3): P = 3/7, R = 1, F1 = 0.6
    assert scored["answer_f1"] == pytest.approx(0.6)
    missed = score_answer(question, "From the documents:\n- \u201cGulls cried over Mira.\u201d [1]")
    assert missed["answer_contains"] is False and missed["answer_rouge1_recall"] == pytest.approx(1 / 4)


def test_conversations_are_derived_from_the_questions_and_scored_by_their_rewrite():
    from raptor_tools.conversations import build_conversations, pronoun_for, subject_recovered
    from raptor_tools.evaluate import EvalDocument, EvalQuestion

    text = "Mark Hunter runs a radio station. He talks to Nora. Nora drives the jeep. She is brave."
    doc = {"d": EvalDocument("d", "t", text)}
    qs = [
        EvalQuestion("q1", "d", "Who is Mark Hunter?", ("a student",)),
        EvalQuestion("q2", "d", "Why does Mark Hunter run a radio station?", ("to talk",)),
        EvalQuestion("q3", "d", "What does Nora drive?", ("the jeep",)),
    ]
    assert (
        pronoun_for("What does Mark tell Mark's friends?", "Mark", "he") == "What does he tell his friends?"
    )
    made = {(c.kind, c.question_id): c for c in build_conversations(qs, doc)}
    pronoun = made[("pronoun", "q2")]
    assert pronoun.turns == ("Who is Mark Hunter?", "Why does he run a radio station?")
    assert subject_recovered(
        pronoun, "Why does Mark Hunter run a radio station? (context: Who is Mark Hunter?)"
    )
    assert not subject_recovered(pronoun, "Why does Nora run a radio station? (context: Who is Mark Hunter?)")
    ellipsis = made[("wh_ellipsis", "q2")]
    assert ellipsis.turns[0] == "Does Mark Hunter run a radio station?"
    assert ellipsis.turns[1] in ("Why?", "And why?")
    assert subject_recovered(ellipsis, "Why does Mark Hunter run a radio station?")
    assert not subject_recovered(ellipsis, "Why? (context: Does Mark Hunter run a radio station?)")
    switch = made[("topic_switch", "q3")]
    assert subject_recovered(switch, "What does Nora drive?")
    assert not subject_recovered(switch, "What does Nora drive? (context: Who is Mark Hunter?)")


async def test_eval_reports_answers_and_follow_ups(tmp_path, embedder):
    set_dir = write_set(tmp_path / "tiny")
    report = await run_eval(
        set_dir, unhurried_settings(data_dir=tmp_path / "c"), use_llm=False, embedder=embedder, followups=True
    )
    assert report["answers"]["questions"] == 3  # o2 has no reference
    assert 0.0 < report["answers"]["rouge1_recall"] <= 1.0
    assert "followups" in report and "all" in report["followups"]["kinds"]
    assert "Extractive answers" in render_markdown(report)


# ---- comparing runs --------------------------------------------------------------------------


def _report(scores: dict[str, tuple[float, bool, float]]) -> dict:
    """A report with per-question answer R-1, reference-in-quotes and collapsed context recall."""
    return {
        "per_question": [
            {
                "question_id": qid,
                "methods": {
                    "collapsed": {
                        "rouge1_recall": context,
                        "extractive": {"answer_rouge1_recall": r1, "answer_contains": contains},
                    }
                },
            }
            for qid, (r1, contains, context) in scores.items()
        ]
    }


def test_compare_pairs_questions_and_gives_a_bootstrap_interval():
    from raptor_tools.eval_compare import bootstrap_interval, compare_reports, render_comparison

    old = _report({f"q{i}": (0.2, False, 0.5) for i in range(20)} | {"only-old": (1.0, True, 1.0)})
    new = _report({f"q{i}": (0.2 + (0.1 if i % 2 else 0.0), i < 5, 0.5) for i in range(20)})
    rows = {row["score"]: row for row in compare_reports(old, new)}
    answer = rows["answer R-1 recall"]
    assert answer["questions"] == 20  # "only-old" is in one run only
    assert answer["old"] == 0.2 and answer["new"] == 0.25 and answer["difference"] == 0.05
    low, high = answer["ci95"]
    assert 0 < low < 0.05 < high <= 0.1  # every resample gains: the interval excludes 0
    assert rows["reference in the quotes"]["difference"] == 0.25
    assert (answer["higher"], answer["lower"]) == (10, 0)  # the odd questions gained, none lost
    assert (rows["reference in the quotes"]["higher"], rows["reference in the quotes"]["lower"]) == (5, 0)
    context = rows["context R-1 recall, collapsed"]
    assert context["difference"] == 0.0 and context["ci95"] == [0.0, 0.0]
    assert (context["higher"], context["lower"]) == (0, 0)
    assert "first-quote R-1 recall" not in rows  # no run has it
    assert bootstrap_interval(np.array([0.1, -0.1] * 10))[0] < 0 < bootstrap_interval(np.array([0.1, -0.1] * 10))[1]
    table = render_comparison(compare_reports(old, new), "old.json")
    assert "| answer R-1 recall | 20 | 0.200 | 0.250 | +0.050 |" in table
    assert table.splitlines()[2].endswith("| higher / lower |") and "| 10 / 0 |" in table
    assert render_comparison([], "x.json").startswith("Nothing to compare")


def test_compare_counts_the_questions_that_moved_either_way():
    """A mean that does not move can hide two questions that did: the counts say so."""
    from raptor_tools.eval_compare import compare_reports, render_comparison

    old = _report({f"q{i}": (0.5, False, 0.5) for i in range(10)})
    new = _report({f"q{i}": (0.5, False, {0: 1.0, 1: 0.0}.get(i, 0.5)) for i in range(10)})
    context = {row["score"]: row for row in compare_reports(old, new)}["context R-1 recall, collapsed"]
    assert context["difference"] == 0.0 and (context["higher"], context["lower"]) == (1, 1)
    assert "| context R-1 recall, collapsed | 10 | 0.500 | 0.500 | +0.000 |" in render_comparison([context], "o.json")
    assert render_comparison([context], "o.json").endswith("| 1 / 1 |")


def test_eval_compare_prints_the_paired_differences(cli_run, tmp_path):
    _, set_dir, _, report = cli_run
    old = tmp_path / "old.json"
    old.write_text(json.dumps(report))
    result, again = _run_cli(set_dir, cli_run[0] / "cache", tmp_path / "new.json", "--compare", str(old))
    assert "Against old.json" in result.stdout
    assert "| answer R-1 recall | 3 |" in result.stdout and "| +0.000 | [+0.000, +0.000] |" in result.stdout
    assert again["compare"]["with"] == str(old)
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    refused = CliRunner().invoke(cli, ["eval", str(set_dir), "--no-llm", "--quiet", "--compare", str(broken)])
    assert refused.exit_code != 0 and "not a report written by raptor eval" in refused.output


def test_the_split_is_by_document_and_fixed(tmp_path):
    from raptor_tools.evaluate import select_questions, split_of

    assert split_of("qasper", "doc-1") == split_of("qasper", "doc-1")
    splits = {split_of("s", f"d{i}") for i in range(30)}
    assert splits == {"train", "heldout"}
    eval_set = load_eval_set(write_set(tmp_path / "tiny"))
    held = select_questions(eval_set, None, "heldout")
    trained = select_questions(eval_set, None, "train")
    assert len(held) + len(trained) == len(eval_set.questions)
    assert all(split_of("tiny", q.doc_id) == "heldout" for q in held)


def test_eval_builds_without_the_upload_deadline_unless_one_is_set(monkeypatch):
    """An evaluation set's long articles on a busy machine would trip the bot's 60 s upload deadline and
    change the figures with the load: `raptor eval` lifts it, as `raptor bench` does, unless it is set."""
    from raptor_engine.config import Settings
    from raptor_tools.evaluate import without_upload_deadline

    monkeypatch.delenv("RAPTOR_BUILD_TIMEOUT", raising=False)
    monkeypatch.delenv("RAPTOR_LLM_BUILD_TIMEOUT", raising=False)
    lifted = without_upload_deadline(Settings.from_env())
    assert lifted.build_timeout == 0.0 and lifted.llm_build_timeout == 0.0
    monkeypatch.setenv("RAPTOR_BUILD_TIMEOUT", "45")
    monkeypatch.setenv("RAPTOR_LLM_BUILD_TIMEOUT", "300")
    kept = without_upload_deadline(Settings.from_env())
    assert kept.build_timeout == 45.0 and kept.llm_build_timeout == 300.0


def test_eval_command_runs_its_builds_without_the_deadline(monkeypatch, tmp_path):
    """The command itself hands run_eval the lifted settings (not only the helper)."""
    import raptor_tools.evaluate as evaluate

    monkeypatch.delenv("RAPTOR_BUILD_TIMEOUT", raising=False)
    seen = {}

    async def fake_run_eval(directory, settings, **kwargs):
        seen["timeout"] = settings.build_timeout
        raise click.ClickException("stop here")

    monkeypatch.setattr(evaluate, "run_eval", fake_run_eval)
    result = CliRunner().invoke(
        cli, ["eval", str(tmp_path), "--no-llm", "--quiet", "--data-dir", str(tmp_path / "c")]
    )
    assert "stop here" in result.output
    assert seen == {"timeout": 0.0}


def test_cached_trees_are_keyed_by_what_computes_the_vectors(embedder):
    """A tree built with another runtime or ONNX export (other vectors) is never reused as this one's."""
    from types import SimpleNamespace

    from raptor_engine.tree.embed_runtime import EXPORT_RECIPE
    from raptor_tools.evaluate import tree_fingerprint

    assert embedder.name in embedder.vectors_id and embedder.runtime.label in embedder.vectors_id
    assert (EXPORT_RECIPE in embedder.vectors_id) == embedder.runtime.label.startswith("onnx")
    settings = unhurried_settings()

    def engine(vectors_id: str) -> SimpleNamespace:
        return SimpleNamespace(
            settings=settings, embedder=SimpleNamespace(vectors_id=vectors_id), summarizer=SimpleNamespace(name="x")
        )

    same = tree_fingerprint(engine(embedder.vectors_id))
    assert tree_fingerprint(engine(embedder.vectors_id)) == same
    assert tree_fingerprint(engine(f"{embedder.name} onnx-int8 (cpu) fused0")) != same
    assert tree_fingerprint(engine(f"{embedder.name} torch (cpu)")) != same
