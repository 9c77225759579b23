"""`raptor eval DIR`: does the collapsed tree give better context than the leaves alone?

A set is a folder with `documents.jsonl` (doc_id, title, doc_text) and `questions.jsonl`
(doc_id, question_id, question, answers, options/gold_index for multiple choice, scope). Each
document becomes its own knowledge base in a cache folder (reused on the next run: identical bytes
are not rebuilt), and every question retrieves context three ways under the same embedder and budget:

- `collapsed`: the collapsed tree, every layer searched at once (the paper's choice);
- `traversal`: tree traversal, top-k per layer from the roots down;
- `leaves`:    the collapsed search restricted to layer 0, i.e. flat chunk retrieval, the baseline.

Without an LLM it scores the context itself: ROUGE-1 / ROUGE-L recall of the reference answers
(the best reference), split into questions whose scope is "global" and the rest, and the share of
context drawn from each layer; and the default extractive answer from the collapsed context (its
quotes' ROUGE-1 recall and token F1, and whether a reference appears in them), and with
`--followups` conversations derived from the questions (raptor_tools/conversations.py): whether each
follow-up's rewrite recovers its subject, and its answer against asking the question standalone.
With an LLM configured it also answers from each context (2000
tokens, as in the paper) and reports multiple-choice accuracy and token F1.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import os
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from raptor_engine.config import Settings
from raptor_engine.engine import Engine
from raptor_engine.errors import RaptorError
from raptor_engine.query.answer import QUOTE, ExtractiveAnswerer, map_citations, neutralise_context
from raptor_engine.query.followup import standalone_question
from raptor_engine.query.ranker import ranker_for
from raptor_engine.tree.embed import Embedder
from raptor_engine.types import RetrievedContext, Turn
from raptor_tools import conversations as convos
from raptor_tools import metrics, say
from raptor_tools.eval_compare import compare_reports, render_comparison

log = logging.getLogger(__name__)

METHODS: dict[str, dict[str, Any]] = {
    "collapsed": {"mode": "collapsed", "layers": None},
    "traversal": {"mode": "traversal", "layers": None},
    "leaves": {"mode": "collapsed", "layers": [0]},
}
METHOD_LABELS = {
    "collapsed": "collapsed tree",
    "traversal": "tree traversal",
    "leaves": "leaves only (flat)",
}
GROUPS = ("global", "other", "all")
ROUND = 4


# ---- reading a set -------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalDocument:
    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class EvalQuestion:
    question_id: str
    doc_id: str
    question: str
    answers: tuple[str, ...]
    options: tuple[str, ...] = ()
    gold_index: int | None = None
    scope: str | None = None
    question_type: str | None = None

    @property
    def group(self) -> str:
        """'global' for questions about a whole document (SQuALITY's plot question), else 'other'."""
        return "global" if self.scope == "global" else "other"

    @property
    def multiple_choice(self) -> bool:
        return bool(self.options) and self.gold_index is not None


@dataclass
class EvalSet:
    name: str
    documents: dict[str, EvalDocument]
    questions: list[EvalQuestion]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise RaptorError(f"{path} is missing; an evaluation set needs documents.jsonl and questions.jsonl.")
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RaptorError(f"{path.name} line {number} is not valid JSON ({exc.msg}).") from exc
            if not isinstance(row, dict):
                raise RaptorError(f"{path.name} line {number} is not a JSON object.")
            rows.append(row)
    return rows


def _answers(row: dict[str, Any]) -> tuple[str, ...]:
    answers = row.get("answers") or ([row["answer"]] if row.get("answer") else [])
    return tuple(str(a) for a in answers if a is not None and str(a).strip())


def load_eval_set(directory: Path) -> EvalSet:
    """Read a set; a question naming a document the set lacks is an error, not a silent skip."""
    directory = Path(directory)
    documents: dict[str, EvalDocument] = {}
    for number, row in enumerate(_read_jsonl(directory / "documents.jsonl"), start=1):
        if not row.get("doc_id") or not isinstance(row.get("doc_text"), str):
            raise RaptorError(f"documents.jsonl line {number} needs a doc_id and a doc_text.")
        documents[str(row["doc_id"])] = EvalDocument(
            str(row["doc_id"]), str(row.get("title") or row["doc_id"]), row["doc_text"]
        )
    questions = []
    for number, row in enumerate(_read_jsonl(directory / "questions.jsonl"), start=1):
        doc_id = str(row.get("doc_id", ""))
        if doc_id not in documents:
            raise RaptorError(
                f"questions.jsonl line {number} names document {doc_id!r}, which is not in the set."
            )
        if not str(row.get("question", "")).strip():
            raise RaptorError(f"questions.jsonl line {number} has no question.")
        options = tuple(str(o) for o in (row.get("options") or ()))
        gold = row.get("gold_index")
        questions.append(
            EvalQuestion(
                question_id=str(row.get("question_id") or f"{doc_id}_q{number}"),
                doc_id=doc_id,
                question=str(row["question"]),
                answers=_answers(row),
                options=options,
                gold_index=int(gold) if gold is not None else None,
                scope=row.get("scope"),
                question_type=row.get("question_type"),
            )
        )
    return EvalSet(directory.resolve().name, documents, questions)


SPLITS = ("all", "train", "heldout")
HELD_OUT_EVERY = 3  # about one document in three is held out from the ranker's training


def split_of(set_name: str, doc_id: str) -> str:
    """'heldout' or 'train' for a document, fixed by a hash of the set's and the document's names (not
    by file order, so adding a document moves no other one): the ranker is fitted on 'train' only."""
    digest = hashlib.sha256(f"{set_name}/{doc_id}".encode()).digest()
    return "heldout" if int.from_bytes(digest[:8], "big") % HELD_OUT_EVERY == 0 else "train"


# ---- trees ---------------------------------------------------------------------------------


def kb_name(doc: EvalDocument, fingerprint: str) -> str:
    """One knowledge base per document and tree recipe: the text's sha256 with the recipe's."""
    digest = hashlib.sha256(f"{fingerprint}\n{doc.text}".encode()).hexdigest()[:16]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", doc.doc_id)[:60]
    return f"eval-{stem}-{digest}"


def tree_fingerprint(engine: Engine) -> str:
    """What shapes a tree: a change here builds new trees instead of reusing cached ones."""
    s = engine.settings
    return json.dumps(
        [
            engine.embedder.vectors_id,
            engine.summarizer.name,
            s.chunk_tokens,
            s.summary_max_tokens,
            s.summary_ratio,
            s.cluster_input_budget,
            s.cluster_threshold,
            s.cluster_dim,
            s.max_clusters,
            s.stop_nodes,
            s.seed,
        ]
    )


def _progress_bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="", file=sys.stderr, disable=not enabled, leave=False)


async def build_trees(
    engine: Engine, documents: list[EvalDocument], *, progress: bool
) -> dict[str, dict[str, Any]]:
    """Ingest each document into its own knowledge base (a cached tree is a no-op 'duplicate')."""
    fingerprint = tree_fingerprint(engine)
    trees: dict[str, dict[str, Any]] = {}
    bar = _progress_bar(len(documents), "trees", progress)
    reused = 0
    for doc in documents:
        kb = kb_name(doc, fingerprint)
        result = await engine.ingest(kb, f"{kb}.txt", doc.text.encode("utf-8"), added_by="eval")
        info = engine.tree_info(kb)
        reused += result.status == "duplicate"
        trees[doc.doc_id] = {
            "kb": kb,
            "tokens": result.document.tokens,
            "chunks": result.document.chunks,
            "layers": {str(layer.layer): layer.nodes for layer in info.layers},
            "nodes": info.nodes,
        }
        bar.update(1)
    bar.close()
    log.info("trees: %d built, %d reused from the cache", len(documents) - reused, reused)
    return trees


# ---- scoring contexts ----------------------------------------------------------------------


def context_text(context: RetrievedContext) -> str:
    """The context as a reader gets it: the nodes' texts in retrieval order."""
    return "\n\n".join(node.text for node in context.nodes)


def score_context(question: EvalQuestion, context: RetrievedContext) -> dict[str, Any]:
    """Recall of the best reference by the context, and where the context came from."""
    text = context_text(context)
    tokens_per_layer: dict[str, int] = defaultdict(int)
    for node in context.nodes:
        tokens_per_layer[str(node.layer)] += node.tokens
    r1 = metrics.best_over(question.answers, metrics.rouge1_recall, text)
    rl = metrics.best_over(question.answers, metrics.rougeL_recall, text)
    return {
        "rouge1_recall": None if r1 is None else round(r1, ROUND),
        "rougeL_recall": None if rl is None else round(rl, ROUND),
        "tokens_used": context.tokens_used,
        "nodes_per_layer": {str(k): v for k, v in context.nodes_per_layer().items()},
        "tokens_per_layer": dict(sorted(tokens_per_layer.items(), key=lambda kv: int(kv[0]))),
        "node_ids": [node.node_id for node in context.nodes],
    }


def quoted_text(answer: str) -> str:
    """What an extractive answer quotes (its quotes joined), or the whole answer if it quotes nothing."""
    return " ".join(QUOTE.findall(answer)) or answer


def contains_answer(reference: str, text: str) -> bool:
    """Whether the reference, SQuAD-normalised, appears word for word in the text."""
    ref = " ".join(metrics.answer_tokens(reference))
    return bool(ref) and f" {ref} " in f" {' '.join(metrics.answer_tokens(text))} "


def score_answer(question: EvalQuestion, answer: str) -> dict[str, Any]:
    """The extractive answer against the references: ROUGE-1 recall and token F1 of its quotes, the
    recall of its first quote alone, and whether a reference appears in the quotes word for word."""
    quotes = QUOTE.findall(answer)
    text = " ".join(quotes) or answer
    r1 = metrics.best_over(question.answers, metrics.rouge1_recall, text)
    first = metrics.best_over(question.answers, metrics.rouge1_recall, quotes[0] if quotes else answer)
    f1 = metrics.max_token_f1(text, question.answers)
    return {
        "answer_rouge1_recall": _rounded(r1),
        "first_quote_rouge1_recall": _rounded(first),
        "answer_f1": _rounded(f1),
        "answer_contains": any(contains_answer(ref, text) for ref in question.answers),
        "answer": answer,
    }


def summarize_answers(scored: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "questions": len(scored),
        "rouge1_recall": _rounded(metrics.mean(s["answer_rouge1_recall"] for s in scored)),
        "first_quote_rouge1_recall": _rounded(metrics.mean(s["first_quote_rouge1_recall"] for s in scored)),
        "f1": _rounded(metrics.mean(s["answer_f1"] for s in scored)),
        "contains": _rounded(metrics.mean(float(s["answer_contains"]) for s in scored)),
    }


def _shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values())
    if not total:
        return {}
    return {k: round(v / total, ROUND) for k, v in sorted(counts.items(), key=lambda kv: int(kv[0]))}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, ROUND)


def summarize_method(
    records: list[dict[str, Any]], questions: list[EvalQuestion], method: str
) -> dict[str, Any]:
    """Means over questions for one method: recall per group, tokens, layer shares, LLM scores."""
    retrieval: dict[str, dict[str, Any]] = {}
    for group in GROUPS:
        chosen = [
            r["methods"][method]
            for r, q in zip(records, questions, strict=True)
            if (group == "all" or q.group == group) and q.answers
        ]
        retrieval[group] = {
            "questions": len(chosen),
            "rouge1_recall": _rounded(metrics.mean(c["rouge1_recall"] for c in chosen)),
            "rougeL_recall": _rounded(metrics.mean(c["rougeL_recall"] for c in chosen)),
        }
    token_counts: dict[str, int] = defaultdict(int)
    node_counts: dict[str, int] = defaultdict(int)
    for record in records:
        for layer, tokens in record["methods"][method]["tokens_per_layer"].items():
            token_counts[layer] += tokens
        for layer, nodes in record["methods"][method]["nodes_per_layer"].items():
            node_counts[layer] += nodes
    node_share = _shares(node_counts)
    summary: dict[str, Any] = {
        "retrieval": retrieval,
        "tokens_used_mean": _rounded(metrics.mean(r["methods"][method]["tokens_used"] for r in records)),
        "layer_token_share": _shares(token_counts),
        "layer_node_share": node_share,
        "non_leaf_node_share": round(1.0 - node_share.get("0", 0.0), ROUND) if node_share else None,
    }
    llm = [r["methods"][method].get("llm") for r in records]
    if any(item is not None for item in llm):
        mc = [item for item, q in zip(llm, questions, strict=True) if item and q.multiple_choice]
        free = [item for item, q in zip(llm, questions, strict=True) if item and not q.multiple_choice]
        summary["llm"] = {
            "mc_questions": len(mc),
            "mc_accuracy": _rounded(metrics.mean(float(item["correct"]) for item in mc)),
            "mc_unparsed": sum(item["picked"] is None for item in mc),
            "f1_questions": sum(item["f1"] is not None for item in free),
            "f1": _rounded(metrics.mean(item["f1"] for item in free)),
        }
    return summary


# ---- answering with an LLM (optional) -------------------------------------------------------

MC_SYSTEM = (
    "You answer multiple-choice questions about a story using only the context given. "
    "Reply with the letter of the best option and nothing else."
)
FREE_SYSTEM = (
    "You answer questions about a document using only the context given. "
    "Answer in as few words as possible: a phrase or one short sentence, no explanation."
)


def mc_messages(question: EvalQuestion, context: str) -> list[dict[str, str]]:
    options = "\n".join(f"{metrics.LETTERS[i]}. {option}" for i, option in enumerate(question.options))
    user = (
        f"Context:\n{context}\n\nQuestion: {question.question}\n\nOptions:\n{options}\n\nAnswer (one letter):"
    )
    return [{"role": "system", "content": MC_SYSTEM}, {"role": "user", "content": user}]


def free_messages(question: EvalQuestion, context: str) -> list[dict[str, str]]:
    user = f"Context:\n{context}\n\nQuestion: {question.question}\n\nShort answer:"
    return [{"role": "system", "content": FREE_SYSTEM}, {"role": "user", "content": user}]


def grade(question: EvalQuestion, reply: str) -> dict[str, Any]:
    """Score one LLM reply: the option it picks for multiple choice, else token F1 against the references."""
    if question.multiple_choice:
        picked = metrics.parse_choice(reply, len(question.options))
        return {"reply": reply, "picked": picked, "correct": picked == question.gold_index, "f1": None}
    f1 = metrics.max_token_f1(reply, question.answers)
    return {"reply": reply, "picked": None, "correct": None, "f1": None if f1 is None else round(f1, ROUND)}


async def answer_all(
    settings: Settings, jobs: list[tuple[EvalQuestion, str]], *, progress: bool
) -> list[dict[str, Any]]:
    """One completion per (question, context), concurrently within the configured limit."""
    from raptor_engine.llm import LLMClient

    client = LLMClient(settings)
    bar = _progress_bar(len(jobs), "answers", progress)

    async def one(question: EvalQuestion, context: str, api: Any) -> dict[str, Any]:
        if question.multiple_choice:
            messages, max_tokens = mc_messages(question, context), 16
        else:
            messages, max_tokens = free_messages(question, context), 100
        completion = await client.complete(
            messages, settings.llm_answer_model, max_tokens, "answer an evaluation question", client=api
        )
        bar.update(1)
        graded = grade(question, completion.text)
        graded["usage"] = [completion.prompt_tokens, completion.completion_tokens]
        return graded

    async with client.session() as api:
        results = await asyncio.gather(*(one(q, c, api) for q, c in jobs))
    bar.close()
    return list(results)


# ---- the run -------------------------------------------------------------------------------


def select_questions(eval_set: EvalSet, limit: int | None, split: str = "all") -> list[EvalQuestion]:
    """The first `limit` questions in file order (all when None) of the split's documents: quick runs
    stay comparable."""
    chosen = [q for q in eval_set.questions if split == "all" or split_of(eval_set.name, q.doc_id) == split]
    return chosen[:limit] if limit else chosen


async def run_eval(
    directory: Path,
    settings: Settings,
    *,
    budget: int = 2000,
    limit: int | None = None,
    use_llm: bool = True,
    embedder: Embedder | None = None,
    progress: bool = False,
    followups: bool = False,
    split: str = "all",
) -> dict[str, Any]:
    """Build (or reuse) the trees, retrieve with every method, score; returns the JSON report."""
    eval_set = load_eval_set(directory)
    questions = select_questions(eval_set, limit, split)
    if not questions:
        raise RaptorError(f"The set {eval_set.name!r} has no questions.")
    needed = list(dict.fromkeys(q.doc_id for q in questions))
    engine = Engine(settings, embedder=embedder)
    try:
        trees = await build_trees(engine, [eval_set.documents[d] for d in needed], progress=progress)
        records, contexts = await asyncio.to_thread(_retrieve_all, engine, trees, questions, budget, progress)
        followed = (
            await asyncio.to_thread(run_followups, engine, trees, eval_set, questions, records, budget)
            if followups
            else None
        )
        llm_used = use_llm and settings.llm_configured
        if llm_used:
            await _add_llm_scores(settings, questions, records, contexts, progress)
        summarizer, embed_name = engine.summarizer.name, engine.embedder.name
    finally:
        engine.close()
    return {
        "set": eval_set.name,
        "questions": len(questions),
        "global_questions": sum(q.group == "global" for q in questions),
        "documents": len(needed),
        "settings": {
            "budget": budget,
            "embedder": embed_name,
            "summarizer": summarizer,
            "top_k": settings.top_k,
            "hnsw_ef": settings.hnsw_ef,
            "limit": limit,
            "split": split,
            "ranking": settings.ranking,
            "llm": settings.llm_answer_model if llm_used else None,
        },
        "trees": trees,
        "methods": {m: summarize_method(records, questions, m) for m in METHODS},
        "answers": summarize_answers(
            [
                r["methods"]["collapsed"]["extractive"]
                for r in records
                if "extractive" in r["methods"]["collapsed"]
            ]
        ),
        **({"followups": followed} if followed is not None else {}),
        "per_question": records,
    }


def _retrieve_all(
    engine: Engine,
    trees: dict[str, dict[str, Any]],
    questions: list[EvalQuestion],
    budget: int,
    progress: bool,
) -> tuple[list[dict[str, Any]], dict[tuple[int, str], str]]:
    """Every question through every method; the records, and each context's text for the LLM."""
    records, contexts = [], {}
    bar = _progress_bar(len(questions), "questions", progress)
    for index, question in enumerate(questions):
        kb = trees[question.doc_id]["kb"]
        asked = engine.respelled(kb, question.question)  # as `raptor ask` reads it: mistyped words respelled
        scored = {}
        for method, options in METHODS.items():
            context = engine.retrieve(kb, asked, budget=budget, **options)
            scored[method] = score_context(question, context)
            contexts[(index, method)] = context_text(context)
            if method == "collapsed" and question.answers:
                # The default answer: extractive quotes from the collapsed context, as `raptor ask` gives.
                answer = answer_extractively(engine, asked, context, [])
                scored[method]["extractive"] = score_answer(question, answer)
        records.append(
            {
                "question_id": question.question_id,
                "doc_id": question.doc_id,
                "scope": question.scope,
                "group": question.group,
                "methods": scored,
            }
        )
        bar.update(1)
    bar.close()
    return records, contexts


def answer_extractively(engine: Engine, query: str, context: RetrievedContext, history: list[Turn]) -> str:
    """The default no-model answer to `query` from `context`, with its [n] markers, as `Engine.ask` gives it."""
    answerer = ExtractiveAnswerer(engine.embedder, ranker=ranker_for(engine.settings.ranking))
    draft = answerer._answer_sync(
        query, neutralise_context(context.nodes), history
    )
    return map_citations(draft.text, context.nodes)[0]


def run_followups(
    engine: Engine,
    trees: dict[str, dict[str, Any]],
    eval_set: EvalSet,
    questions: list[EvalQuestion],
    records: list[dict[str, Any]],
    budget: int,
) -> dict[str, Any]:
    """Ask every derived conversation turn by turn (rewrite, collapsed retrieval, extractive answer)
    and score its last turn against asking the set's question directly."""
    standalone = {r["question_id"]: r["methods"]["collapsed"].get("extractive") for r in records}
    by_id = {q.question_id: q for q in questions}
    per_conversation = []
    for conversation in convos.build_conversations(questions, eval_set.documents):
        kb = trees[conversation.doc_id]["kb"]
        history: list[Turn] = []
        query, answer = "", ""
        for turn in conversation.turns:
            query = standalone_question(turn, history) if history else turn
            context = engine.retrieve(kb, query, budget=budget)
            answer = answer_extractively(engine, query, context, history)
            history += [Turn("user", turn), Turn("assistant", answer)]
        scored = score_answer(by_id[conversation.question_id], answer)
        base = standalone.get(conversation.question_id) or {}
        per_conversation.append(
            {
                "kind": conversation.kind,
                "question_id": conversation.question_id,
                "turns": list(conversation.turns),
                "rewrite": query,
                "standalone": conversation.standalone,
                "subject_recovered": convos.subject_recovered(conversation, query),
                "answer_rouge1_recall": scored["answer_rouge1_recall"],
                "answer_contains": scored["answer_contains"],
                "standalone_rouge1_recall": base.get("answer_rouge1_recall"),
                "standalone_contains": base.get("answer_contains"),
                "answer": answer,
            }
        )
    kinds: dict[str, Any] = {}
    for kind in (*convos.KINDS, "all"):
        chosen = [c for c in per_conversation if kind in ("all", c["kind"])]
        if not chosen:
            continue
        kinds[kind] = {
            "conversations": len(chosen),
            "subject_recovered": _rounded(metrics.mean(float(c["subject_recovered"]) for c in chosen)),
            "rouge1_recall": _rounded(metrics.mean(c["answer_rouge1_recall"] for c in chosen)),
            "standalone_rouge1_recall": _rounded(metrics.mean(c["standalone_rouge1_recall"] for c in chosen)),
            "contains": _rounded(metrics.mean(float(c["answer_contains"]) for c in chosen)),
            "standalone_contains": _rounded(
                metrics.mean(
                    None if c["standalone_contains"] is None else float(c["standalone_contains"])
                    for c in chosen
                )
            ),
        }
    return {"kinds": kinds, "per_conversation": per_conversation}


async def _add_llm_scores(
    settings: Settings,
    questions: list[EvalQuestion],
    records: list[dict[str, Any]],
    contexts: dict[tuple[int, str], str],
    progress: bool,
) -> None:
    """Answer every gradable question from each method's context and attach the grades."""
    jobs, slots = [], []
    for index, question in enumerate(questions):
        if not question.multiple_choice and not question.answers:
            continue  # nothing to grade against
        for method in METHODS:
            jobs.append((question, contexts[(index, method)]))
            slots.append((index, method))
    graded = await answer_all(settings, jobs, progress=progress)
    for (index, method), result in zip(slots, graded, strict=True):
        records[index]["methods"][method]["llm"] = result


# ---- output --------------------------------------------------------------------------------


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _layer_mix(shares: dict[str, float]) -> str:
    return " · ".join(f"L{layer} {share * 100:.0f}%" for layer, share in shares.items()) or "–"


def render_markdown(report: dict[str, Any]) -> str:
    """The report's tables in Markdown, for the terminal and for docs/EVALUATION.md."""
    s = report["settings"]
    lines = [
        f"### {report['set']}: {report['questions']} questions ({report['global_questions']} global) "
        f"over {report['documents']} documents",
        "",
        f"Budget {s['budget']} tokens · embedder {s['embedder']} · summaries {s['summarizer']}"
        + (f" · first {s['limit']} questions" if s["limit"] else ""),
        "",
        "| method | R-1 recall, global | R-L recall, global | R-1 recall, other | R-L recall, other "
        "| R-1 recall, all | R-L recall, all | tokens used | context by layer (tokens) | non-leaf nodes |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for method, summary in report["methods"].items():
        r = summary["retrieval"]
        non_leaf = summary["non_leaf_node_share"]
        lines.append(
            f"| {METHOD_LABELS[method]} "
            f"| {_fmt(r['global']['rouge1_recall'])} | {_fmt(r['global']['rougeL_recall'])} "
            f"| {_fmt(r['other']['rouge1_recall'])} | {_fmt(r['other']['rougeL_recall'])} "
            f"| {_fmt(r['all']['rouge1_recall'])} | {_fmt(r['all']['rougeL_recall'])} "
            f"| {summary['tokens_used_mean'] or 0:.0f} | {_layer_mix(summary['layer_token_share'])} "
            f"| {'–' if non_leaf is None else f'{non_leaf * 100:.1f}%'} |"
        )
    answers = report.get("answers")
    if answers and answers["questions"]:
        lines += [
            "",
            "Extractive answers (no model) from the collapsed context, against the references:",
            "",
            "| questions | R-1 recall of the quotes | R-1 recall, first quote | token F1 | reference in the quotes |",
            "|---|---|---|---|---|",
            f"| {answers['questions']} | {_fmt(answers['rouge1_recall'])} "
            f"| {_fmt(answers['first_quote_rouge1_recall'])} | {_fmt(answers['f1'])} "
            f"| {_fmt(answers['contains'])} |",
        ]
    followed = report.get("followups")
    if followed:
        lines += [
            "",
            "Follow-ups (conversations derived from the questions; the last turn scored):",
            "",
            "| kind | conversations | subject recovered | answer R-1 recall | asked standalone "
            "| reference in quotes | ... standalone |",
            "|---|---|---|---|---|---|---|",
        ]
        for kind, k in followed["kinds"].items():
            lines.append(
                f"| {kind} | {k['conversations']} | {_fmt(k['subject_recovered'])} | {_fmt(k['rouge1_recall'])} "
                f"| {_fmt(k['standalone_rouge1_recall'])} | {_fmt(k['contains'])} "
                f"| {_fmt(k['standalone_contains'])} |"
            )
    if any("llm" in summary for summary in report["methods"].values()):
        lines += [
            "",
            f"Answers by {s['llm']} from each method's context:",
            "",
            "| method | MC accuracy | MC questions (unparsed) | token F1 | F1 questions |",
            "|---|---|---|---|---|",
        ]
        for method, summary in report["methods"].items():
            llm = summary.get("llm") or {}
            lines.append(
                f"| {METHOD_LABELS[method]} | {_fmt(llm.get('mc_accuracy'))} "
                f"| {llm.get('mc_questions', 0)} ({llm.get('mc_unparsed', 0)}) "
                f"| {_fmt(llm.get('f1'))} | {llm.get('f1_questions', 0)} |"
            )
    return "\n".join(lines)


# ---- command line --------------------------------------------------------------------------


def _read_report(path: Path) -> dict[str, Any]:
    """An earlier run's JSON report, or one sentence saying why it cannot be compared with."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise click.ClickException(f"{path} is not a report written by raptor eval --out ({exc}).") from exc
    if not isinstance(report, dict) or not isinstance(report.get("per_question"), list):
        raise click.ClickException(f"{path} is not a report written by raptor eval --out (no per_question).")
    return report


def without_upload_deadline(settings: Settings) -> Settings:
    """The settings with no build deadline, unless RAPTOR_BUILD_TIMEOUT / RAPTOR_LLM_BUILD_TIMEOUT is set:
    the deadline guards the bot against hostile uploads, and an evaluation set's long articles, built on a
    busy machine, would otherwise fail with "took longer than the 60 s allowed" and change the figures
    with the machine's load (as `raptor bench` lifts it for its long texts)."""
    if "RAPTOR_BUILD_TIMEOUT" not in os.environ:
        settings = dataclasses.replace(settings, build_timeout=0.0)
    if "RAPTOR_LLM_BUILD_TIMEOUT" not in os.environ:
        settings = dataclasses.replace(settings, llm_build_timeout=0.0)
    return settings


@click.command("eval")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--data-dir",
    "cache_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the trees are cached (default .eval-cache/<set name>).",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the full report as JSON.")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N questions.")
@click.option("--budget", type=click.IntRange(min=1), default=2000, show_default=True, help="Context tokens.")
@click.option("--no-llm", is_flag=True, help="Skip LLM answers even when an LLM is configured.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.option(
    "--followups", is_flag=True, help="Also score follow-up conversations derived from the questions."
)
@click.option(
    "--split",
    type=click.Choice(SPLITS),
    default="all",
    show_default=True,
    help="Only the documents of this split (by a hash of the document's id; the ranker trains on 'train').",
)
@click.option(
    "--compare",
    "compare_with",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="An earlier run's --out JSON: each score's paired difference with a 95% confidence interval.",
)
@click.pass_context
def eval_command(
    ctx: click.Context,
    directory: Path,
    cache_dir: Path | None,
    out: Path | None,
    limit: int | None,
    budget: int,
    no_llm: bool,
    quiet: bool,
    followups: bool,
    split: str,
    compare_with: Path | None,
) -> None:
    """Compare collapsed tree, tree traversal and leaves-only retrieval on the set in DIRECTORY."""
    base = (ctx.obj or {}).get("settings") if isinstance(ctx.obj, dict) else None
    try:
        settings = base or Settings.from_env()
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    earlier = _read_report(compare_with) if compare_with else None
    name = directory.resolve().name
    settings = dataclasses.replace(settings, data_dir=cache_dir or Path(".eval-cache") / name)
    settings = without_upload_deadline(settings)
    try:
        report = asyncio.run(
            run_eval(
                directory,
                settings,
                budget=budget,
                limit=limit,
                use_llm=not no_llm,
                progress=not quiet and sys.stderr.isatty(),
                followups=followups,
                split=split,
            )
        )
    except RaptorError as exc:
        raise click.ClickException(str(exc)) from exc
    say(render_markdown(report))
    if earlier is not None and compare_with is not None:
        report["compare"] = {"with": str(compare_with), "scores": compare_reports(earlier, report)}
        say("\n" + render_comparison(report["compare"]["scores"], compare_with.name))
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        click.echo(f"\nWrote {out}", err=True)
