"""Elements an HTML page's style sheets hide, found without a browser.

A page can hide text by a rule in its `<style>` (or, in an e-book, a linked .css file) rather than in the
element's own `style` attribute: `.note { display: none }` hides every `<div class="note">`, and its words,
which no reader of the page sees, were read as the page's text (an instruction to an LLM among them). This
module reads the rules that decide whether an element is shown — `display`, `visibility`, `opacity`,
`font-size` and a `transparent` colour — and applies them as a browser's cascade does: the declaration of
the most specific selector wins, a later one wins a tie, `!important` wins over both, and the element's
own `style` attribute over any rule not marked important. So `.tab { display: none }` then
`.tab.active { display: block }` hides every tab but the active one.

Selectors are matched by this module in one pass over the page's elements (soupsieve's `select` cost
28 us an element for each selector: a page of 100,000 elements and 50 rules would take over two minutes).
A selector is read when it is made of type, class and id selectors joined by descendant (` `) or child
(`>`) combinators; others (attributes, pseudo-classes such as `:hover`, sibling combinators) are left
unapplied, so an element they would hide is read, as before. Rules inside `@media` blocks other than
`screen` or `all`, and style sheets for print, are left out too: a rule for print or a narrow screen is not
what a reader of the page on a screen sees.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import IngestError

MAX_RULES = 2_000  # selectors with a declaration that bears on being seen, read from one page's style sheets
MAX_CSS_CHARS = 2_000_000  # of style sheet text read for one page
MAX_ANCESTORS = 200  # ancestors looked at to match a selector's outer parts
MAX_CHECKS = 500_000  # rules tried on elements and ancestors walked, for one page (about 3 s of CPU; 300 real
# styled pages of documentation took at most 4,212)

_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_DECLARATION = re.compile(r"([-a-zA-Z]+)\s*:\s*([^;]*)")
_ZERO = re.compile(r"[+]?(?:0+(?:\.0*)?|\.0+)(?:[a-z]+|%)?")
_TRANSPARENT = re.compile(r"transparent|rgba\([^)]*,\s*0*(?:\.0*)?\s*\)|hsla\([^)]*,\s*0*(?:\.0*)?\s*\)")
_COMPOUND = re.compile(r"(\*|[a-zA-Z][-a-zA-Z0-9]*)?((?:[.#][-_a-zA-Z0-9\u00a0-\uffff]+)*)")
_PART = re.compile(r"([.#])([-_a-zA-Z0-9\u00a0-\uffff]+)")
_SHOWN_MEDIA = re.compile(r"\s*(?:only\s+)?(?:screen|all)\s*", re.IGNORECASE)
_PRINT_ONLY = re.compile(
    r"\s*(?:only\s+)?(?:print|speech|aural|braille|embossed|tty|tv|projection|handheld)\b", re.I
)


@dataclass(frozen=True)
class _Compound:
    tag: str | None  # None: any element
    ids: tuple[str, ...]
    classes: tuple[str, ...]

    def matches(self, element: Any) -> bool:
        if self.tag is not None and element.name != self.tag:
            return False
        attrs = element.attrs
        if self.ids and any(attrs.get("id") != wanted for wanted in self.ids):
            return False
        if self.classes:
            have = attrs.get("class") or ()
            have = have.split() if isinstance(have, str) else have
            return all(wanted in have for wanted in self.classes)
        return True


@dataclass(frozen=True)
class _Rule:
    parts: tuple[_Compound, ...]  # outermost first
    combinators: tuple[str, ...]  # between parts: " " (descendant) or ">" (child)
    prop: str  # display, visibility, opacity, font-size, color or background
    look: str  # what it makes of its element: `_look`
    rank: tuple[int, int, int, int, int]  # important, ids, classes, types, order: the larger wins


_PLAIN_GROUND = re.compile(
    r"(?:none|transparent|white|#f{3}|#f{6}|rgba?\(\s*255\s*,\s*255\s*,\s*255\s*(?:,[^)]*)?\)"
    r"|inherit|initial|unset|revert)?",
)
_WHITE = re.compile(r"white|#f{3}|#f{6}|#f{8}|rgba?\(\s*255\s*,\s*255\s*,\s*255\s*(?:,\s*(?:1|1\.0*)\s*)?\)")
_GROUND_PROPS = ("background", "background-color", "background-image")


def _look(prop: str, value: str) -> tuple[str, str] | None:
    """(property, look) of a declaration that bears on whether its element's text is seen, or None. The
    look is "hide" (display: none, visibility: hidden, a zero opacity or font size, a transparent
    colour), "show" (the same property set otherwise), "white" (white letters: seen only on a ground),
    "ground" (a background that is not white) or "plain" (a white or no background)."""
    value = re.sub(r"!\s*important", "", value, flags=re.IGNORECASE).strip().lower()
    if prop in _GROUND_PROPS:
        return "background", "plain" if _PLAIN_GROUND.fullmatch(value) else "ground"
    if prop == "display":
        hides = value == "none"
    elif prop == "visibility":
        hides = value in ("hidden", "collapse")
    elif prop in ("opacity", "font-size"):
        hides = bool(_ZERO.fullmatch(value))
    elif prop == "color":
        compact = re.sub(r"\s+", "", value)
        if _WHITE.fullmatch(compact):
            return prop, "white"
        hides = bool(_TRANSPARENT.fullmatch(compact))
    else:
        return None
    return prop, "hide" if hides else "show"


def _compound(text: str) -> _Compound | None:
    match = _COMPOUND.fullmatch(text)
    if match is None or not text:
        return None
    tag = match.group(1)
    parts = _PART.findall(match.group(2))
    ids = tuple(name for mark, name in parts if mark == "#")
    classes = tuple(name for mark, name in parts if mark == ".")
    return _Compound(None if tag in (None, "*") else tag.lower(), ids, classes)


def _selector(text: str) -> tuple[tuple[_Compound, ...], tuple[str, ...]] | None:
    """A selector of compounds joined by descendant or child combinators, outermost first; None for any
    other (an attribute, a pseudo-class, a sibling combinator)."""
    tokens = re.split(r"\s*(>)\s*|\s+", text.strip())
    parts: list[_Compound] = []
    combinators: list[str] = []
    pending = " "
    for token in tokens:
        if token is None or token == "":
            continue
        if token == ">":
            if not parts:
                return None
            pending = ">"
            continue
        compound = _compound(token)
        if compound is None:
            return None
        if parts:
            combinators.append(pending)
        parts.append(compound)
        pending = " "
    return (tuple(parts), tuple(combinators)) if parts else None


def _top_level_blocks(css: str) -> tuple[list[tuple[str, str]], list[str]]:
    """(prelude, body) of each rule a screen shows: top-level rules, and those inside `@media screen`
    or `@media all` blocks; and the bodies of the other at-rules, skipped whole."""
    out: list[tuple[str, str]] = []
    skipped: list[str] = []
    pending: list[tuple[str, str]] = [("", css)]
    while pending:
        _, text = pending.pop()
        at, depth, start = 0, 0, 0
        prelude_start = 0
        while at < len(text):
            ch = text[at]
            if ch == "{":
                if depth == 0:
                    start = at
                depth += 1
            elif ch == "}" and depth:
                depth -= 1
                if depth == 0:
                    prelude = text[prelude_start:start].strip()
                    body = text[start + 1 : at]
                    if prelude.startswith("@"):
                        media = prelude[len("@media") :] if prelude.lower().startswith("@media") else None
                        if media is not None and _SHOWN_MEDIA.fullmatch(media):
                            pending.append((prelude, body))
                        else:
                            skipped.append(body)
                    else:
                        out.append((prelude, body))
                    prelude_start = at + 1
            elif ch == ";" and depth == 0:  # @import, @charset
                prelude_start = at + 1
            at += 1
    return out, skipped


def _paints_ground(body: str) -> bool:
    return any(
        _look(prop.lower(), value) == ("background", "ground") for prop, value in _DECLARATION.findall(body)
    )


def _rules(css: str) -> tuple[list[_Rule], bool]:
    """The rules of `css` whose declarations bear on whether an element is seen, a rule a selector; and
    whether a background is painted where these rules cannot place it (a selector not read, an at-rule
    skipped, the rules' cap reached), so that white letters may stand on it."""
    rules: list[_Rule] = []
    order = 0
    blocks, skipped = _top_level_blocks(_COMMENT.sub(" ", css[:MAX_CSS_CHARS]))
    unplaced = len(css) > MAX_CSS_CHARS or any(_paints_ground(body) for body in skipped)
    for prelude, body in blocks:
        declared = []
        for prop, value in _DECLARATION.findall(body):
            look = _look(prop.lower(), value)
            if look is not None:
                declared.append((*look, "!important" in re.sub(r"\s+", "", value.lower())))
        if not declared:
            continue
        for text in prelude.split(","):
            parsed = _selector(text)
            if parsed is None:
                unplaced = unplaced or any(
                    (prop, look) == ("background", "ground") for prop, look, _ in declared
                )
                continue
            parts, combinators = parsed
            ids = sum(len(p.ids) for p in parts)
            classes = sum(len(p.classes) for p in parts)
            types = sum(p.tag is not None for p in parts)
            for prop, look, important in declared:
                order += 1
                rules.append(_Rule(parts, combinators, prop, look, (important, ids, classes, types, order)))
                if len(rules) >= MAX_RULES:
                    return rules, True
    return rules, unplaced


class TooComplex(Exception):
    """A page's style sheets would take more than `MAX_CHECKS` selector checks to apply."""


class _Budget:
    """Selector parts checked against elements so far, bounded: 1,000 rules each ending in `p` over
    50,000 paragraphs, each rule walking their ancestors, took 181 s of CPU unbounded."""

    def __init__(self) -> None:
        self.spent = 0

    def spend(self, steps: int) -> None:
        self.spent += steps
        if self.spent > MAX_CHECKS:
            raise TooComplex


def _outer_parts_match(rule: _Rule, element: Any, budget: _Budget) -> bool:
    """Whether the parts before a rule's last one match `element`'s ancestors (nearest match first)."""
    current = element
    for index in range(len(rule.parts) - 2, -1, -1):
        compound, combinator = rule.parts[index], rule.combinators[index]
        parent = current.parent
        if combinator == ">":
            if parent is None or parent.name == "[document]" or not compound.matches(parent):
                return False
            current = parent
            continue
        steps = 0
        while parent is not None and parent.name != "[document]" and steps < MAX_ANCESTORS:
            if compound.matches(parent):
                break
            parent, steps = parent.parent, steps + 1
        else:
            budget.spend(steps)
            return False
        budget.spend(steps)
        if parent is None or parent.name == "[document]":
            return False
        current = parent
    return True


def _inline_looks(element: Any) -> dict[str, str]:
    """What the element's own style attribute says, property by property (`_look`), with the colour and
    background its old attributes set (`<font color>`, `bgcolor`), which any style overrides."""
    looks: dict[str, str] = {}
    for attribute, prop in (("color", "color"), ("bgcolor", "background")):
        if element.attrs.get(attribute) and (element.name == "font" or attribute == "bgcolor"):
            said = _look(prop if prop == "color" else "background-color", str(element.attrs[attribute]))
            if said is not None:
                looks[said[0]] = said[1]
    style = element.attrs.get("style")
    for name, value in _DECLARATION.findall(str(style or "")):
        said = _look(name.lower(), value)
        if said is not None:
            looks[said[0]] = said[1]
    return looks


def print_only(media: str) -> bool:
    """Whether a `media` attribute names only what is not a screen (print, speech)."""
    return bool(media) and _PRINT_ONLY.match(media) is not None


def style_sheets(soup: Any) -> str:
    """The text of a page's `<style>` elements that apply on a screen (not `media="print"`)."""
    sheets = []
    for style in soup.find_all("style"):
        media = str(style.get("media") or "")
        if print_only(media):
            continue
        sheets.append(style.get_text())
    return "\n".join(sheets)


def _links_sheet(link: Any) -> bool:
    rel = link.get("rel") or ()
    return "stylesheet" in [word.lower() for word in (rel.split() if isinstance(rel, str) else rel)]


def _indexed(
    rules: list[_Rule],
) -> tuple[dict[str, list[_Rule]], dict[str, list[_Rule]], dict[str, list[_Rule]], list[_Rule]]:
    """The rules by their last part's id, else its first class, else its type; the rest match anything."""
    by_id: dict[str, list[_Rule]] = {}
    by_class: dict[str, list[_Rule]] = {}
    by_tag: dict[str, list[_Rule]] = {}
    anywhere: list[_Rule] = []
    for rule in rules:
        last = rule.parts[-1]
        if last.ids:
            by_id.setdefault(last.ids[0], []).append(rule)
        elif last.classes:
            by_class.setdefault(last.classes[0], []).append(rule)
        elif last.tag is not None:
            by_tag.setdefault(last.tag, []).append(rule)
        else:
            anywhere.append(rule)
    return by_id, by_class, by_tag, anywhere


def hide_styled(soup: Any, extra_css: str = "", *, name: str = "", judge_white: bool | None = None) -> int:
    """Mark with the `hidden` attribute every element of `soup` that its style sheets (and `extra_css`,
    an e-book's linked sheets) or its own style hide, and every element in white letters with no
    background under it (a white page shows nothing of it), so every reader of the tree leaves them out;
    the count marked. White is judged only where every background is known (`judge_white`; by default,
    unless the page links a style sheet that is not here, which may paint one, or a rule this module
    cannot place paints one: `:root { background: #111 }`, a `prefers-color-scheme` block)."""
    if judge_white is None:
        judge_white = not any(_links_sheet(link) for link in soup.find_all("link"))
    rules, unplaced_ground = _rules(f"{extra_css}\n{style_sheets(soup)}")
    judge_white = judge_white and not unplaced_ground
    by_id, by_class, by_tag, anywhere = _indexed(rules)
    grounded: dict[int, bool] = {}  # element id -> whether a background is painted under it
    budget = _Budget()
    marked = 0
    try:
        for element in soup.find_all(True):
            attrs = element.attrs
            classes = attrs.get("class") or ()
            classes = classes.split() if isinstance(classes, str) else classes
            candidates = [*anywhere, *by_tag.get(element.name, ())]
            if attrs.get("id"):
                candidates += by_id.get(str(attrs["id"]), ())
            for class_name in dict.fromkeys(classes):
                candidates += by_class.get(class_name, ())
            winners: dict[str, _Rule] = {}
            matched: dict[
                tuple[tuple[_Compound, ...], tuple[str, ...]], bool
            ] = {}  # a selector's declarations share it
            budget.spend(len(candidates))
            for rule in candidates:
                key = (rule.parts, rule.combinators)
                if key not in matched:
                    matched[key] = rule.parts[-1].matches(element) and _outer_parts_match(
                        rule, element, budget
                    )
                if matched[key]:
                    best = winners.get(rule.prop)
                    if best is None or rule.rank > best.rank:
                        winners[rule.prop] = rule
            looks = {prop: rule.look for prop, rule in winners.items()}
            inline = (
                _inline_looks(element)
                if attrs.get("style") or "bgcolor" in attrs or element.name == "font"
                else {}
            )
            looks.update(
                {
                    prop: look
                    for prop, look in inline.items()
                    if prop not in winners or not winners[prop].rank[0]
                }
            )
            ground = looks.get("background") == "ground" or grounded.get(id(element.parent), False)
            grounded[id(element)] = ground
            if "hide" in looks.values() or (judge_white and looks.get("color") == "white" and not ground):
                attrs["hidden"] = ""
                marked += 1
    except TooComplex:
        raise IngestError(
            name,
            f"has style sheets too complex to apply safely (over {MAX_CHECKS:,} selector checks), so what they hide cannot be told.",
        ) from None
    return marked
