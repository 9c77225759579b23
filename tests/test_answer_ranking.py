"""What the extractive answerer quotes first for kinds of questions (real embedder, hand-made context)."""

from __future__ import annotations

import re

import pytest

from raptor_engine.ingest.sentences import content_terms, is_heading, units, word_count, words
from raptor_engine.query.answer import (
    EVENT_BONUS,
    FOUND,
    INSTRUCTION_BONUS,
    NOTHING_FOUND,
    PURPOSE_BONUS,
    QUOTE,
    WEAK_MATCH,
    ExtractiveAnswerer,
    _answers_kind,
    _counts_the_asked,
    _describes,
    _event_bonus,
    _instruction_bonus,
    _measures_the_asked,
    _names_only_its_own,
    _picks_out_the_asked,
    asked_action,
    asked_which,
    counted_terms,
    definition_subject,
)
from raptor_engine.query.ranker import load_ranker
from raptor_engine.types import ContextNode

LEAVES = [
    # (text, start in the document)
    (
        "Ambrose Kittow kept the light through the Great Gale. The Board awarded Ambrose Kittow a silver "
        "medal. Ambrose Kittow carried the oil up the steps every night.",
        4000,
    ),
    (
        "After Samuel Treloar was dismissed, the Board appointed Ambrose Kittow as principal keeper. "
        "Kittow was thirty-four, the son of a Halbeck pilot.",
        3000,
    ),
    (
        "The light was first lit in 1839. The tower was painted white in 1910. "
        "The last keeper locked the tower door in 1987, when the light was automated.",
        6000,
    ),
    (
        "Halbeck Cove is a fishing town whose lighthouse was kept by hand for a century and a half. "
        "The light was only as reliable as the people who tended it.",
        0,
    ),
    ("Wrecks on the ledge drowned many sailors before the tower was built.", 1000),
    ("The keepers polished the lens every morning with soft leather.", 5000),
    ("A fog signal was installed in 1923 below the tower.", 5500),
]


def context() -> list[ContextNode]:
    return [
        ContextNode(i + 1, 0, "a.md", 0.5, text, 30, 1, start=start, end=start + len(text))
        for i, (text, start) in enumerate(LEAVES)
    ]


def quotes(embedder, question: str) -> list[str]:
    draft = ExtractiveAnswerer(embedder)._answer_sync(question, context(), [])
    return QUOTE.findall(draft.text)


def test_who_was_x_quotes_what_x_was_first(embedder):
    first = quotes(embedder, "Who was Ambrose Kittow?")[0]
    assert "appointed Ambrose Kittow as principal keeper" in first or "Kittow was thirty-four" in first


def test_when_did_it_end_quotes_the_year_of_the_ending(embedder):
    assert "1987" in quotes(embedder, "When did the light close?")[0]
    assert "1839" in quotes(embedder, "When did the light start?")[0]


@pytest.mark.parametrize(
    ("question", "sentence", "bonus"),
    [
        ("When did the light close?", "The last keeper locked the tower door in 1987.", EVENT_BONUS),
        ("When did the light close?", "The light was first lit in 1839.", -EVENT_BONUS),  # a start's year
        # ... and as much again for the asked event in its own words (`ASKED_EVENTS`: a start is a 'first'),
        ("When did the light start?", "The first keeper came in 1839.", 2 * EVENT_BONUS),
        # ... and again when it is said of what the question asks about (`_event_said_of_the_asked`)
        ("When did the light start?", "The light was first lit in 1839.", 3 * EVENT_BONUS),
        ("When did the light start?", "The last keeper locked the tower door in 1987.", -EVENT_BONUS),
        ("When did the light close?", "The tower was painted white in 1910.", 0.0),  # neither event
        ("When did the light close?", "The light was first lit long ago.", 0.0),  # no year
        # a span's years: 'from' a year is a start, 'to / till' a year an end
        ("When did Ada Brenn die?", "Ada Brenn ran the press from 1902.", -EVENT_BONUS),
        ("When did the mill close?", "It ground corn from 1790 to 1910.", EVENT_BONUS),
        ("When did the mill open?", "It ground corn from 1790 to 1910.", EVENT_BONUS),
        ("When did the mill open?", "It ground corn till 1910.", -EVENT_BONUS),
        ("When did the mill close?", "It ground corn from the early days.", 0.0),  # no year
    ],
)
def test_a_when_question_prefers_the_year_of_its_event_over_the_other_one(question, sentence, bonus):
    assert _event_bonus(question, sentence) == bonus


def test_a_thematic_question_quotes_more_sentences_in_reading_order_opening_first(embedder):
    found = quotes(embedder, "Summarize the whole thing")
    assert len(found) > 3
    starts = {text: start for text, start in LEAVES}
    order = [next(start + text.index(q) for text, start in starts.items() if q in text) for q in found]
    assert order == sorted(order) and order[0] < 1000  # the opening is in it, and first


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("Who was Ambrose Kittow?", "Ambrose Kittow"),
        ("What is the Skerrow Ledge?", "Skerrow Ledge"),
        ("Who was Agnes Penrose's foreman?", "foreman"),
        ("Tell me about the fog signal", "fog signal"),
        ("What is this document about?", None),
        ("What did he do in 1887?", None),
    ],
)
def test_definition_questions_and_their_subject(question, subject):
    assert definition_subject(question) == subject


@pytest.mark.parametrize(
    ("sentence", "describes"),
    [
        ("Kittow was thirty-four, the son of a Halbeck pilot.", True),
        ("The Board appointed Ambrose Kittow as principal keeper.", True),
        ("Ambrose Kittow, a pilot's son, took charge in 1885.", True),
        ("Her foreman for most of that time was Tobias Quill.", False),  # describes a foreman, not Kittow
        ("The Board awarded Ambrose Kittow a silver medal.", False),
    ],
)
def test_sentences_that_describe_a_subject(sentence, describes):
    assert _describes("Ambrose Kittow", sentence) is describes
    assert re.search("foreman", sentence) is None or _describes("foreman", sentence)


TABLES = [
    # a Word table as the loader writes it, then a Markdown table: rows are facts worth quoting
    "The treasurer reported the spring purchases.\n\nItem | Cost\nLadders | £320\nGrafting knives | £85\n\n"
    "The society agreed to buy more next year.",
    "Loans are listed below.\n\n| Item | Loan period | Late fee per day |\n|---|---|---|\n"
    "| Books | 3 weeks | 20p |\n| DVDs | 1 week | £1 |",
]


def table_quotes(embedder, question: str) -> list[str]:
    nodes = [ContextNode(i + 1, 0, "t.md", 0.5, text, 40, 1) for i, text in enumerate(TABLES)]
    return QUOTE.findall(ExtractiveAnswerer(embedder)._answer_sync(question, nodes, []).text)


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("How much did the ladders cost?", "Item: Ladders; Cost: £320"),
        ("What did the grafting knives cost?", "Item: Grafting knives; Cost: £85"),
        ("What is the late fee for DVDs?", "Item: DVDs; Loan period: 1 week; Late fee per day: £1"),
        ("How long can I keep books?", "Item: Books; Loan period: 3 weeks; Late fee per day: 20p"),
    ],
)
def test_a_table_row_is_quoted_with_its_header(embedder, question, first):
    found = table_quotes(embedder, question)
    assert found[0] == first
    assert not any(
        q.startswith(("Item | ", "| Item", "Item; ")) or "---" in q for q in found
    )  # never the header


@pytest.mark.parametrize(
    ("sentence", "quotable"),
    [
        ("Mill7 ground oats.", True),  # a terse log line: three words, all content
        ("The lamp failed.", True),
        ("Keeper Hale drowned.", True),
        ("See below.", False),
        ("It was there.", False),
        ("Thank you all.", False),
    ],
)
def test_three_word_sentences_are_quoted_when_they_carry_content(embedder, sentence, quotable):
    """A log of terse entries drowned in punctuation got 'nothing answers' because 3-word sentences
    were never candidates; short filler must still never be quoted."""
    text = ("..... ?!?! ----- " * 20) + sentence + (" ..... ?!?!" * 20)
    node = ContextNode(1, 0, "log.txt", 0.5, text, 60, 1, start=0, end=len(text))
    draft = ExtractiveAnswerer(embedder)._answer_sync("What happened at the mill and the lamp?", [node], [])
    assert (sentence in draft.text) is quotable


# Scripts written without spaces between words: a Chinese sentence is one unbroken run of letters.
ZH_LEAVES = [
    "灯塔看守人的历史\n\n斯凯罗角灯塔建于1852年。第一任看守人是托马斯·哈尔贝克，他在灯塔工作了二十年。"
    "1887年的大风暴中，安布罗斯·基托救出了十二名渔民。灯塔的透镜每周清洗一次，使用酒精和软布。",
    "1921年，灯塔改用电力照明。最后一位看守人玛格丽特·黑尔于1975年离开，此后灯塔实现了自动化。"
    "如今灯塔是一座博物馆，每年接待约三万名游客。",
]
JA_LEAVES = [
    "灯台の歴史\n\n岬の灯台は1852年に建てられました。最初の灯台守はトーマス・ハルベックで、二十年間働きました。"
    "1887年の大嵐で、アンブローズ・キットーが十二人の漁師を救助しました。",
    "1921年、灯台の照明は電気に切り替えられました。最後の灯台守マーガレット・ヘイルは1975年に去り、"
    "その後灯台は自動化されました。現在、灯台は博物館になっています。",
]
KO_LEAVES = [  # Korean is spaced, but its particles and endings join the words: 등대는, 등대가
    "스케로 곶 등대는 1852년에 지어졌다. 첫 번째 등대지기는 토마스 할벡이었고, 그는 이십 년 동안 일했다. "
    "1887년 큰 폭풍 때 앰브로즈 키토가 어부 열두 명을 구했다.",
    "1921년에 등대는 전기 조명으로 바뀌었다. 마지막 등대지기 마거릿 헤일은 1975년에 떠났다. 오늘날 등대는 박물관이다.",
]
MIXED_LEAVES = [
    "The Skerro Point light was built in 1852. Its first keeper was Thomas Halbeck, who served for twenty "
    "years. In the great gale of 1887 the keeper's assistant 安布罗斯·基托 rescued twelve fishermen from the "
    "rocks. The lens was cleaned every week with spirit and a soft cloth.",
]


def answer_over(embedder, leaves: list[str], question: str, ranked: bool) -> str:
    nodes = [ContextNode(i + 1, 0, "t.txt", 0.5, text, 80, 1) for i, text in enumerate(leaves)]
    answerer = ExtractiveAnswerer(embedder, ranker=load_ranker() if ranked else None)
    return answerer._answer_sync(question, nodes, []).text


@pytest.mark.parametrize("ranked", [False, True])
@pytest.mark.parametrize(
    ("leaves", "question", "answer"),
    [
        (ZH_LEAVES, "谁在1887年救出了渔民？", "1887年的大风暴中，安布罗斯·基托救出了十二名渔民。"),
        (ZH_LEAVES, "灯塔什么时候改用电力？", "1921年，灯塔改用电力照明。"),
        (JA_LEAVES, "1887年に漁師を救助したのは誰ですか？", "キットーが十二人の漁師を救助しました。"),
        (JA_LEAVES, "灯台はいつ電気に切り替えられましたか？", "1921年、灯台の照明は電気に切り替えられました。"),
        (KO_LEAVES, "등대는 언제 전기로 바뀌었나?", "1921년에 등대는 전기 조명으로 바뀌었다."),
        (MIXED_LEAVES, "Who rescued the fishermen in 1887?", "assistant 安布罗斯·基托 rescued twelve"),
    ],
)
def test_chinese_japanese_and_korean_questions_quote_the_sentence_that_answers(embedder, leaves, question, answer, ranked):
    """A Chinese sentence was one 'word' with no terms, and every one of them a heading: 'nothing answers'."""
    text = answer_over(embedder, leaves, question, ranked)
    assert text.startswith(FOUND), text
    assert answer in QUOTE.findall(text)[0], text


@pytest.mark.parametrize("ranked", [False, True])
@pytest.mark.parametrize(
    ("leaves", "question"),
    [
        (ZH_LEAVES, "火星上有多少颗卫星？"),
        (JA_LEAVES, "火星には月がいくつありますか？"),
        (KO_LEAVES, "화성에는 달이 몇 개 있나?"),
    ],
)
def test_a_chinese_japanese_or_korean_question_the_text_does_not_answer_gets_no_answer(embedder, leaves, question, ranked):
    text = answer_over(embedder, leaves, question, ranked)
    assert text.startswith((WEAK_MATCH, NOTHING_FOUND)), text


def test_chinese_and_japanese_are_counted_and_compared_in_characters():
    assert word_count("1921年，灯塔改用电力照明。") == 10  # the year, and each of nine characters
    assert content_terms("谁在1887年救出了渔民？") == ["1887", "年救", "救出", "渔民"]  # no 谁, 在, 了
    assert content_terms("灯台はいつ電気に切り替えられましたか？") == ["灯台", "電気"]  # lone 切, 替 too short
    # Hangul: each word whole, then its bigrams
    assert content_terms("등대는 1921년에") == ["등대는", "등대", "대는", "1921", "년에"]
    assert is_heading("灯塔看守人的历史") and not is_heading("灯塔改用电力照明。")


@pytest.mark.parametrize("text", [LEAVES[0][0], "Mill7 ground oats; well-known B12 café, naïve Zoë's 3.5 m."])
def test_text_without_chinese_or_japanese_is_counted_as_before(text):
    """The guard of the paths above: spaced text is read in the words it always was."""
    assert units(text) == words(text)
    assert word_count(text) == len(words(text))


@pytest.mark.parametrize(
    ("question", "sentence", "answers"),
    [
        ("灯塔什么时候改用电力？", "1921年，灯塔改用电力照明。", True),  # a year against its 年
        ("灯塔什么时候改用电力？", "灯塔的透镜每周清洗一次。", False),
        ("灯台はいつ電気になりましたか？", "1921年、灯台の照明は電気に切り替えられました。", True),
        ("谁救出了渔民？", "安布罗斯·基托救出了十二名渔民。", True),  # a name with its middle dot
        ("1887年に漁師を救助したのは誰ですか？", "アンブローズ・キットーが救助しました。", True),
        ("基托救出了多少名渔民？", "他救出了十二名渔民。", True),  # a count before its measure word
        ("每年有多少游客？", "每年接待约3万名游客。", True),
        ("为什么灯塔改用电力？", "因为油灯太危险，灯塔改用电力。", True),
        ("등대는 언제 전기로 바뀌었나?", "1921년에 등대는 전기 조명으로 바뀌었다.", True),
        # spaced text is read as before: a label's digits and a middle dot between Latin letters are neither
        ("How many keepers were there?", "See Table B12 for the keepers.", False),
        ("Who kept the light?", "The light was kept by Hale·X.", False),
    ],
)
def test_what_a_chinese_japanese_or_korean_question_asks_for(question, sentence, answers):
    assert _answers_kind(question, sentence) is answers


def first_quote(embedder, leaves: list[str], question: str) -> str:
    """The first quote of the extractive answer (hand weights, as a short fact's blend weighs them) over
    leaves in this order."""
    nodes = [
        ContextNode(i + 1, 0, "a.md", 0.5, text, 30, 1, start=1000 * i, end=1000 * i + len(text))
        for i, text in enumerate(leaves)
    ]
    return QUOTE.findall(ExtractiveAnswerer(embedder)._answer_sync(question, nodes, []).text)[0]


KITTOWS = [
    "His assistant from 1911 was Ambrose Kittow's grandson, Peter Kittow, so that the Kittow name returned.",
    "Peter Kittow, who had kept the light through the war, retired the same year.",
    "Kittow was thirty-four, the son of a Halbeck pilot, and had served at two rock stations.",
    "The Board of Trinity awarded Ambrose Kittow a silver medal and a gift of twenty pounds.",
]


def test_who_was_x_leads_with_what_x_was_not_a_namesake_or_what_is_xs(embedder):
    assert "the son of a Halbeck pilot" in first_quote(embedder, KITTOWS, "Who was Ambrose Kittow?")


@pytest.mark.parametrize(
    ("sentence", "describes", "only_its_own"),
    [
        ("Peter Kittow, who had kept the light through the war, retired.", False, False),  # a namesake
        ("His assistant was Ambrose Kittow's grandson, Peter Kittow.", False, True),
        ("Ambrose Kittow's son was a pilot.", False, True),  # describes the son
        ("Ambrose Kittow (1851-1920), the son of a pilot, kept the light.", True, False),
        ("The Board appointed Ambrose Kittow as principal keeper.", True, False),
    ],
)
def test_a_sentence_about_a_namesake_or_about_what_is_xs_does_not_describe_x(sentence, describes, only_its_own):
    assert _describes("Ambrose Kittow", sentence) is describes
    assert _names_only_its_own("Ambrose Kittow", sentence) is only_its_own


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("What does keep warm mean?", "keep warm"),
        ("What does the term per diem stand for?", "per diem"),
        ("What is meant by a boat bay?", "boat bay"),
        ("Define soffritto", "soffritto"),
        ("What is the size of the new dataset?", None),  # a number, not a description
    ],
)
def test_questions_asking_what_words_mean_are_definition_questions_and_a_size_is_not(question, subject):
    assert definition_subject(question) == subject


def test_a_plural_named_by_a_sentence_is_described_by_it():
    assert _describes("super", "A beehive is built from stacked wooden boxes called supers.")
    assert not _describes("model", "Our models are trained on the training data.")  # not named, only used


@pytest.mark.parametrize(
    ("leaves", "question", "answer"),
    [
        (  # a past 'when' wants a year, not a month that recurs
            [
                "Today heritage trains run on summer weekends and the valley celebrates its railway every June.",
                "The Harrow Valley Railway was surveyed in 1871 by the engineer Ada Pennick.",
                "The last scheduled train ran on the ninth of March 1962.",
            ],
            "When did the railway close?",
            "1962",
        ),
        (  # 'how many men' wants a number of men, not of children, nor a year
            [
                "He arrived with his wife and their three children in October 1839, and moved into the keeper's cottage.",
                "Between 1820 and 1836 the parish register records forty-three men lost from wrecks.",
                "This history follows the keepers from the building of the tower in 1839 to 1987.",
            ],
            "How many men were lost before the tower was built?",
            "forty-three men",
        ),
        (  # 'how old' wants an age
            ["Ilka worked through three nights in the workshop.", "His daughter Ilka was twelve when the story begins."],
            "How old was Ilka?",
            "was twelve",
        ),
        (  # 'what is the size of' wants a number, not a description of the dataset
            [
                "Each instance in the dataset was annotated by multiple annotators.",
                "Using this annotation model, we create a new large publicly available dataset of English tweets.",
                "The dataset contains 14,100 tweets and is released freely to the research community.",
            ],
            "What is the size of the new dataset?",
            "14,100",
        ),
    ],
)
def test_a_factual_question_leads_with_the_sentence_holding_what_it_asks_for(embedder, leaves, question, answer):
    assert answer in first_quote(embedder, leaves, question)


@pytest.mark.parametrize(
    ("question", "counted"),
    [
        ("How many men were lost before the tower was built?", {"men"}),
        ("How many kinds of chart can reports use?", {"kind", "chart"}),
        ("How much water does the kettle hold?", {"water"}),
        ("How much did the bridge cost?", set()),  # a verb follows: nothing named is counted
        ("When did it close?", set()),
    ],
)
def test_what_a_how_many_question_counts(question, counted):
    assert counted_terms(question) == counted


@pytest.mark.parametrize(
    ("sentence", "counts"),
    [
        ("It records forty-three men lost from wrecks.", True),
        ("By spring there were ninety blue lanterns in Varro.", True),  # an adjective between
        ("Our dataset holds two sources of data, one to generate tags.", False),  # one counts a source
        ("We implement three types of tag recommendation.", False),  # three counts types
        ("The tower was built in 1839 by men from the town.", False),  # a year counts nothing
    ],
)
def test_a_number_counts_the_word_right_after_it(sentence, counts):
    question = "How many men were lost?" if "men" in sentence else "How many tags do they use?"
    if "lanterns" in sentence:
        question = "How many blue lanterns were there?"
    assert _counts_the_asked(question, sentence) is counts


@pytest.mark.parametrize(
    ("leaves", "question", "answer"),
    [
        (  # 'who did X' wants the sentence holding the asked action, not one sharing its object
            [
                "Ruth Okafor will order the new boiler from Brindle and Sons.",
                "Ruth Okafor is a heating engineer who has offered to install the boiler for free.",
            ],
            "Who will install the new boiler?",
            "offered to install",
        ),
        (  # 'which X did Y': the action, and the one X it names ("the Polruan yard" for a shipyard)
            [
                "The lifeboat Grace Trelawny served the harbour for forty years and saved ninety lives.",
                "Captain Eli Rowe commanded the Grace Trelawny after the war.",
                "The boat was built at the Polruan yard in Cornwall.",
            ],
            "Which shipyard built the Grace Trelawny?",
            "Polruan yard",
        ),
        (  # 'how do I use X' wants the step that does it, not what X is
            [
                "Quick start is a setting that heats the oven to full power for the first ten minutes.",
                "To use it, turn the dial to the lightning mark before you set the temperature.",
            ],
            "How do I use quick start?",
            "turn the dial",
        ),
        (  # 'how far' wants a distance, not a year or a count
            [
                "The Skerry light was lit in 1839 and 112 steps lead up to its lantern from the harbour side.",
                "The light stands three miles off the harbour mouth.",
            ],
            "How far is the Skerry light from the harbour?",
            "three miles",
        ),
        (  # 'how often' wants a frequency, not a count
            [
                "The number 9 bus runs from the station to the hospital and has 22 stops.",
                "Number 9 buses leave every twenty minutes on weekdays.",
            ],
            "How often does the number 9 bus run?",
            "every twenty minutes",
        ),
        (  # 'how long does it cook' wants a duration, not the number it serves
            ["The soup serves 4 people and keeps in the fridge.", "Cook it gently for forty minutes."],
            "How long does the soup cook?",
            "forty minutes",
        ),
    ],
)
def test_a_question_of_the_newer_kinds_leads_with_the_sentence_that_answers_it(embedder, leaves, question, answer):
    assert answer in first_quote(embedder, leaves, question)


@pytest.mark.parametrize(
    ("question", "sentence", "measures"),
    [
        ("How long does the stew simmer?", "Simmer the stew for two and a half hours.", True),
        ("How long does the stew simmer?", "The stew feeds six people.", False),
        ("How long is the tour?", "The tour covers a little under one kilometre.", True),  # a length, too
        ("How far is the crossing?", "The crossing is six miles long.", True),
        ("How far is the crossing?", "The crossing opened in 1987 miles from nowhere.", False),  # a year
        ("How much is a return ticket?", "A return ticket costs 8 pounds.", True),
        ("How much does the ticket cost?", "It costs \u00a38 at the machine.", True),
        ("How much does the ticket cost?", "It takes 8 minutes to print.", False),
        ("How much does the tent weigh?", "The tent weighs 1.9 kilograms packed.", True),
        ("How often does it sail?", "The ferry sails every ninety minutes.", True),
        ("How often does it sail?", "The ferry is held twice a week for repairs.", True),
        ("How often does it sail?", "The ferry carries ninety cars.", False),
        ("How many cars does it carry?", "The ferry sails every ninety minutes.", False),  # no measure asked
    ],
)
def test_a_measure_question_wants_a_number_with_a_unit_of_what_it_measures(question, sentence, measures):
    assert _measures_the_asked(question, sentence) is measures


@pytest.mark.parametrize(
    ("question", "action"),
    [
        ("Who rebuilt the ramp?", "rebuilt"),
        ("Who will fit the new tank?", "fit"),
        ("Which shipyard built the ferry?", "build"),
        ("Who designed the extension?", "design"),
        ("Who was Feri?", None),  # a description, not an action
        ("Who is the approver?", None),
        ("Which setting should I use?", None),  # the verb's subject is the reader
        ("Who does Maskull realize he really is?", None),  # a name, not a verb, follows 'does'
        ("Which Greek God is Hera's husband?", None),
    ],
)
def test_the_action_a_who_did_question_asks_about(question, action):
    assert asked_action(question) == action


@pytest.mark.parametrize(
    ("question", "noun"),
    [
        ("Which shipyard built the ferry?", "shipyard"),
        ("Which parallel corpora are used?", "corpora"),  # the last word of what is asked about
        ("Which additional latent variables are used in the model?", "variabl"),
        ("What kinds of offensive content are explored?", "content"),
        ("Which Greek God is Hera's husband?", "god"),
        ("Where was it built?", None),
    ],
)
def test_what_a_which_question_asks_about(question, noun):
    assert asked_which(question)[0] == noun


@pytest.mark.parametrize(
    ("question", "sentence", "bonus"),
    [
        ("How do I use keep warm?", "To use it, press the thermometer button.", INSTRUCTION_BONUS + PURPOSE_BONUS),
        ("How do I claim expenses?", "Submit your claim within thirty days.", INSTRUCTION_BONUS),
        ("How to pitch the tent?", "First, peg out the four corners of the inner tent.", INSTRUCTION_BONUS),
        ("How do I descale the kettle?", "Descale the kettle every four weeks.", 0.0),  # names the task: says when
        ("How do I claim expenses?", "The approver is the manager who signs a claim.", 0.0),
        ("How do I claim expenses?", "Divers found that two piles had rotted.", 0.0),
        ("How do I claim expenses?", "They paid the claim in May.", 0.0),  # a pronoun, not an imperative
        ("How do I use keep warm?", "Keep warm is a mode that holds the water hot.", -INSTRUCTION_BONUS),
        ("How did Feri make the flame blue?", "Add salt to the oil.", 0.0),  # not a how-to question
        ("How would you compare the two reports?", "Read both reports first.", 0.0),  # asks for a judgement
    ],
)
def test_a_how_to_question_prefers_an_instruction_that_carries_out_the_task(question, sentence, bonus):
    assert _instruction_bonus(question, sentence) == pytest.approx(bonus)


@pytest.mark.parametrize(
    ("question", "sentence", "picks"),
    [
        ("Which shipyard built the ferry?", "The ship was built at the Appledore yard in Devon.", True),
        ("What kind of grind does a French press need?", "A French press needs a coarse grind.", True),
        ("Which class should I book for rail travel?", "Book rail travel in standard class.", True),
        ("Which class should I book for rail travel?", "Book rail travel in the class you like.", False),
        ("Which shipyard built the ferry?", "The ferry carries twenty cars.", False),
        ("What kind of boat did they row?", "The club's boats are racked in the bay.", False),  # whose, not which
        ("Which datasets are used?", "It finds biases in annotating datasets.", False),  # what is done to them
        ("Where is the yard?", "The ship was built at the Appledore yard.", False),  # no 'which'
    ],
)
def test_a_which_question_wants_a_sentence_naming_one_of_what_it_asks_about(question, sentence, picks):
    assert _picks_out_the_asked(question, sentence) is picks


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        ("The county refused on account of the cost.", True),
        ("She named it in honour of Arthur Keel.", True),
        ("Divers found that two piles had rotted, so the trust replaced all six.", True),
        ("The trust chose Corran Marine since it had built the original ramp.", True),
        ("Captain Avery has commanded the ship since 2015.", False),  # 'since' a year says when
        ("The ramp was rebuilt with a steel deck.", False),
    ],
)
def test_a_why_question_finds_a_reason_however_it_is_written(sentence, reason):
    assert _answers_kind("Why did it happen?", sentence) is reason
