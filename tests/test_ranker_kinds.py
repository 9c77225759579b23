"""What the quote ranking reads off the question and the document: the kind of answer asked for (a
quantity, not a label's digits; a place or source), the kind of document the context comes from (a
paper, a story, or one not recognised), and the blend weights `raptor train-ranker` fits per kind."""

from __future__ import annotations

import json

import numpy as np
import pytest

from raptor_engine.query.answer import ExtractiveAnswerer, _answers_kind, holds_kind
from raptor_engine.query.ranker import (
    HAND,
    MODEL_PATH,
    NARRATIVE,
    PAPER,
    SENTENCE_FEATURES,
    Blend,
    RankerError,
    document_kind,
    ranker_from_json,
)
from raptor_engine.types import ContextNode
from raptor_tools import train_ranker
from raptor_tools.evaluate import EvalQuestion
from raptor_tools.train_ranker import Rows, blend_scores, choose_blend, quote_scores_by_set

NUMBER, WHERE = 1, 4  # positions in answer.ANSWER_KINDS


@pytest.mark.parametrize(
    ("sentence", "quantity"),
    [
        ("For editor tags, we collect data of 48,705 e-books from 13 publishers.", True),
        ("Each tweet was labelled by five annotators.", True),
        ("As Figure FIGREF16 shows, the tags are related BIBREF13.", False),
        ("The results are in Table 3 and Section 4.1.", False),
        ("Prior work [12] and [3, 4] used INLINEFORM0 and garg2012unsupervised.", False),
        ("Prior work ［12］ did the same.", False),
        # a date is no quantity either
        ("The tower was built in 1839 and painted in the 1950s.", False),
        ("The keepers served from 1861 to 1874.", False),
        ("Version 3 was released on 3 September 2024.", True),  # the version's 3 is a number
        ("It was released on 3 September 2024.", False),
        ("Between 1820 and 1836 the register records forty-three men lost.", True),
    ],
)
def test_a_quantity_is_a_number_not_the_digits_of_a_label(sentence, quantity):
    assert holds_kind(NUMBER, sentence) is quantity
    assert _answers_kind("How many are there?", sentence) is quantity


def test_the_size_or_number_of_something_is_a_number_question():
    assert _answers_kind("What is the size of the new dataset?", "It holds 14,100 tweets.")
    assert not _answers_kind("What is the size of the new dataset?", "It is freely released.")


@pytest.mark.parametrize(
    ("sentence", "place"),
    [
        ("The recipes were scraped from Food.com over 18 years.", True),
        ("We collect tweets from Twitter.", True),
        ("The story takes place on Mars, in the year of the drought.", True),
        ("They met aboard the Aphrodite.", True),
        ("We collect a novel dataset of recipe texts.", False),
        ("In this paper we propose a model.", False),  # a sentence's first word is not a name
    ],
)
def test_a_where_question_prefers_a_place_or_a_source(sentence, place):
    assert holds_kind(WHERE, sentence) is place
    assert _answers_kind("Where do they get the recipes from?", sentence) is place


def test_sentence_features_mark_a_place_for_a_where_question(embedder):
    context = [
        ContextNode(1, 0, "a.md", 0.6, "Our recipes come from Food.com. We clean every recipe text.", 20, 1)
    ]
    texts, rows = ExtractiveAnswerer(embedder).feature_rows("Where do the recipes come from?", context)
    column = SENTENCE_FEATURES.index("kind_where")
    assert rows[texts.index("Our recipes come from Food.com."), column] == 1.0
    assert rows[texts.index("We clean every recipe text."), column] == 0.0


# ---- the kind of document -------------------------------------------------------------------------

PAPER_SENTENCES = [
    "Our tagger reaches 91.5% accuracy on the treebank of BIBREF3, as Table 2 shows for every setting.",
    "Following Smith et al., embeddings are pretrained on 1.2 billion tokens of news text [4].",
    "Section 3 describes the convolutional encoder, whose filters span 3, 5 and 7 characters.",
    "Figure 2 plots validation loss against epochs; dropout of 0.3 kept it from diverging.",
    "Against the baseline of BIBREF7 the F1 rises by 2.4 points on rare entity types.",
    "Annotators agreed on 87.2% of mentions (Cohen kappa 0.81), see Appendix 1 for the guidelines.",
    "Ablating the character layer costs 1.7 points, the largest drop in Table 4 by far.",
    "We release code, splits and hyper-parameters, listed in Table 5, under an MIT licence [9].",
    "Training took 14.5 hours on one GPU with batches of 32 sentences and a learning rate of 0.001.",
    "Errors concentrate on nested spans, which Section 5.2 analyses with examples from BIBREF11.",
    "Cross-lingual transfer to Dutch loses 6.8% relative, in line with Garcia et al. and [12].",
    "Equation 3 defines the loss as the sum of the tagging and the language-model terms.",
]
STORY_SENTENCES = [
    "\u201cWe cannot stay here another night,\u201d said the keeper, staring at the black water.",
    "Ivy asked him why the lamp had failed again, and he only shook his head.",
    "\u201cFetch the oil from the cellar,\u201d he told her, \u201cand mind the broken step.\u201d",
    "She came back with the can and whispered that someone had been down there before them.",
    "\u201cNonsense,\u201d the old man replied, though his hands trembled on the rail.",
    "Outside the gulls cried over the rocks as the tide crept up the landing.",
    "\u201cLook at the glass,\u201d Ivy said, pointing at the cracked lens above them.",
    "He answered that the lens had stood for forty winters and would stand one more.",
    "\u201cThen who cut the wick?\u201d she asked, holding up the frayed end for him to see.",
    "For a long time neither of them said anything, and the wind shouted through the gallery.",
    "\u201cGo to bed,\u201d he said at last, \u201cI will watch the light myself tonight.\u201d",
    "She climbed the stairs slowly, counting the steps as her mother had taught her.",
]
TRANSCRIPT_SENTENCES = [
    f"Project Manager: So the remote should be ready by week {i}, and I think we said 12.5% "
    f"over budget is fine, as Table {i} of the report says, but the designers asked for more time."
    for i in range(12)
]


def test_document_kind_tells_a_paper_from_a_story():
    assert document_kind(PAPER_SENTENCES) == PAPER
    assert document_kind(STORY_SENTENCES) == NARRATIVE


def test_a_document_of_no_known_kind_is_not_guessed():
    assert document_kind(TRANSCRIPT_SENTENCES) is None  # speaker turns: a kind no blend was fitted on
    assert document_kind(PAPER_SENTENCES[:2]) is None  # too little text to say
    assert document_kind(PAPER_SENTENCES[:6] + STORY_SENTENCES[:6]) is None  # both at once
    plain = ["The lighthouse stood on the headland for a century and guided ships past the rocks."] * 20
    assert document_kind(plain) is None


def test_a_kind_with_its_own_weights_uses_them_and_any_other_the_blend_of_all():
    blend = Blend(short_fact=0.4, other=0.5, repeat_penalty=0.0, by_kind=((NARRATIVE, 0.6, 0.9),))
    assert blend.weight("Which ship is it?", NARRATIVE) == 0.6
    assert blend.weight("Why did she leave?", NARRATIVE) == 0.9
    assert blend.weight("Why did she leave?", PAPER) == 0.5
    assert blend.weight("Why did she leave?", None) == 0.5
    kinds = {NARRATIVE: {"short_fact": 0.6, "other": 0.9}}
    assert Blend.from_json({"short_fact": 0.4, "other": 0.5, "repeat_penalty": 0.0, "by_kind": kinds}) == blend


def test_a_ranker_file_with_an_unknown_kind_or_kind_weight_out_of_range_is_refused():
    data = json.loads(MODEL_PATH.read_text())
    data["blend"]["by_kind"] = {"poem": {"short_fact": 0.5, "other": 0.5}}
    with pytest.raises(RankerError, match="out of range"):
        ranker_from_json(data)
    data["blend"]["by_kind"] = {PAPER: {"short_fact": 0.5, "other": 1.5}}
    with pytest.raises(RankerError, match="out of range"):
        ranker_from_json(data)


def test_the_answer_blends_with_the_weights_of_the_context_kind(embedder):
    """The same question over a story's context and a paper's is scored with each kind's weight."""
    data = json.loads(MODEL_PATH.read_text())
    data["blend"] = {
        "short_fact": 0.0,
        "other": 0.0,
        "repeat_penalty": 0.0,
        "by_kind": {NARRATIVE: {"short_fact": 1.0, "other": 1.0}},
    }
    ranker = ranker_from_json(data)
    answerer = ExtractiveAnswerer(embedder, ranker=ranker)
    for sentences, weight in ((STORY_SENTENCES, 1.0), (PAPER_SENTENCES, 0.0)):
        context = [ContextNode(1, 0, "a.md", 0.5, " ".join(sentences), 900, 1)]
        texts, rows = answerer.feature_rows("Why did the lamp fail?", context)
        expected = blend_of(ranker.sentence_scores(rows), rows[:, HAND], weight)
        assert np.allclose(ranker.quote_scores("Why did the lamp fail?", rows, document_kind(texts)), expected)


def blend_of(model: np.ndarray, hand: np.ndarray, weight: float) -> np.ndarray:
    return weight * model + (1 - weight) * hand


# ---- choosing weights per kind --------------------------------------------------------------------


def kind_rows() -> tuple[Rows, list[np.ndarray]]:
    """Reason questions over papers, whose answering sentence only the hand score finds, and over
    stories, whose answering sentence only the model finds: no one weight serves both."""
    rows, learned = Rows(), []
    kinds = [
        ("papers", PAPER_SENTENCES, ("accuracy of the SQuAD corpus",), "accuracy of the SQuAD corpus"),
        ("stories", STORY_SENTENCES, ("storm wrecked the lamp room",), "storm wrecked the lamp room"),
    ]
    for i in range(6):
        for set_name, filler, answers, answer in kinds:
            texts = [f"The {answer} is why, in the end."] + filler
            answer_first = [1.0] + [0.3] * len(filler)
            distractors_first = [0.0] + [1.0 - 0.05 * j for j in range(len(filler))]
            hand, model = (
                (answer_first, distractors_first) if set_name == "papers" else (distractors_first, answer_first)
            )
            features = np.zeros((len(texts), len(SENTENCE_FEATURES)))
            features[:, HAND] = hand
            rows.features.append(features)
            rows.labels.append(np.array([1.0] + [0.0] * len(filler)))
            rows.texts.append(texts)
            rows.questions.append(EvalQuestion(f"{set_name}{i}", f"{set_name}-doc{i}", "Why?", answers=answers))
            rows.sets.append(set_name)
            learned.append(np.array(model))
    return rows, learned


def test_a_document_kind_gets_its_own_weights_where_its_questions_ask_for_them(monkeypatch):
    monkeypatch.setattr(train_ranker, "MIN_KIND_QUESTIONS", 3)
    rows, learned = kind_rows()
    blend, tried = choose_blend(rows, learned)
    # the blend of all keeps the papers' answers (the hand weights' set may not get worse) ...
    assert blend["other"] < 0.5
    # ... the stories get a weight of their own that finds theirs; the papers keep the blend of all
    assert set(blend["by_kind"]) == {NARRATIVE} and blend["by_kind"][NARRATIVE]["other"] > 0.5
    assert set(tried) == {"all", PAPER, NARRATIVE}
    chosen = Blend.from_json(blend)
    found = quote_scores_by_set(rows, blend_scores(rows, learned, chosen), 0.0)
    assert found["papers"][1] == 1.0 and found["stories"][1] == 1.0
    alone = Blend.from_json({**blend, "by_kind": {}})
    assert quote_scores_by_set(rows, blend_scores(rows, learned, alone), 0.0)["stories"][1] == 0.0


def test_a_kind_with_too_few_questions_keeps_the_blend_of_all():
    rows, learned = kind_rows()  # 6 questions a kind, under MIN_KIND_QUESTIONS
    blend, tried = choose_blend(rows, learned)
    assert blend["by_kind"] == {} and set(tried) == {"all"}
