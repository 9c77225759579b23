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
A selector is read when it is made of type, class, id and attribute selectors (`[hidden]`,
`[aria-hidden="true"]`, `[style*="display:none" i]`) and the pseudo-classes `:not()`, `:first-child`,
`:last-child`, `:only-child`, their `-of-type` kin, `:root` and `:link`, joined by descendant (` `), child
(`>`) or sibling (`+`, `~`) combinators; a pseudo-class of a state the reader of a page at rest never puts
it in (`:hover`, `:focus`, `:target`) makes its selector match nothing. Others (`:nth-child()`, `:has()`)
are left unapplied, so an element they would hide is read, as before. A `::before` or `::after` rule's `content` ('Note: ', a quote
mark, `attr(title)`) is text the reader sees, so it is written into its element unless the rule hides it;
a rule hiding only the pseudo-element leaves its element shown. An author's `display` shows an element
the `hidden` attribute hides (that attribute is only the browser's own `display: none`). Rules inside
`@media` blocks other than
`screen` or `all`, and style sheets for print, are left out too: a rule for print or a narrow screen is not
what a reader of the page on a screen sees.
"""

from __future__ import annotations

import re
import unicodedata
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
_SHOWN_MEDIA = re.compile(r"\s*(?:only\s+)?(?:screen|all)\s*", re.IGNORECASE)
_PRINT_ONLY = re.compile(
    r"\s*(?:only\s+)?(?:print|speech|aural|braille|embossed|tty|tv|projection|handheld)\b", re.I
)


_IDENT = r"-?[_a-zA-Z\u00a0-\uffff][-_a-zA-Z0-9\u00a0-\uffff]*"
_TYPE = re.compile(r"\*|[a-zA-Z][-a-zA-Z0-9]*")
_CLASS_OR_ID = re.compile(r"([.#])([-_a-zA-Z0-9\u00a0-\uffff]+)")
_ATTRIBUTE = re.compile(
    rf"\[\s*({_IDENT})\s*(?:([~|^$*]?=)\s*(?:\"([^\"]*)\"|'([^']*)'|({_IDENT}|-?\d[\w.-]*))\s*([iIsS])?\s*)?\]"
)
_PSEUDO = re.compile(r"(::?)([-a-zA-Z]+)(?:\(([^()]*)\))?")
_PSEUDO_ELEMENTS = frozenset({"before", "after"})
# pseudo-classes of a state a page at rest is never in: a rule on them shows or hides nothing a reader sees
_STATES = frozenset(
    "hover focus focus-within focus-visible active visited target target-within checked indeterminate "
    "user-invalid user-valid playing paused fullscreen picture-in-picture modal popover-open open".split()
)
_STRUCTURAL = frozenset(
    "first-child last-child only-child first-of-type last-of-type only-of-type root link any-link".split()
)


@dataclass(frozen=True)
class _Attribute:
    name: str
    op: str  # "" (present), "=", "~=", "|=", "^=", "$=" or "*="
    value: str
    folded: bool  # the `i` flag: compared without case

    def matches(self, element: Any) -> bool:
        have = element.attrs.get(self.name)
        if have is None:
            return False
        if not self.op:
            return True
        text = " ".join(have) if isinstance(have, list) else str(have)
        value = self.value
        if self.folded:
            text, value = text.lower(), value.lower()
        if self.op == "=":
            return text == value
        if self.op == "~=":
            return value in text.split()
        if self.op == "|=":
            return text == value or text.startswith(f"{value}-")
        if not value:  # '^=""', '$=""' and '*=""' match nothing
            return False
        return {"^=": text.startswith, "$=": text.endswith, "*=": text.__contains__}[self.op](value)


def _tag_siblings(element: Any, forward: bool, name: str | None = None) -> bool:
    """Whether an element has an element sibling (of tag `name`, if given) after it (`forward`) or before it."""
    sibling = element.next_sibling if forward else element.previous_sibling
    while sibling is not None:
        if getattr(sibling, "name", None) is not None and name in (None, sibling.name):
            return True
        sibling = sibling.next_sibling if forward else sibling.previous_sibling
    return False


def _structural(pseudo: str, element: Any) -> bool:
    """Whether an element is in the place a structural pseudo-class names."""
    if pseudo == "root":
        return element.parent is None or element.parent.name == "[document]"
    if pseudo in ("link", "any-link"):
        return element.name in ("a", "area") and "href" in element.attrs
    of_type = element.name if pseudo.endswith("-of-type") else None
    none_before = pseudo.startswith("last-") or not _tag_siblings(element, False, of_type)
    return none_before and (pseudo.startswith("first-") or not _tag_siblings(element, True, of_type))


@dataclass(frozen=True)
class _Compound:
    tag: str | None  # None: any element
    ids: tuple[str, ...]
    classes: tuple[str, ...]
    attributes: tuple[_Attribute, ...] = ()
    structural: tuple[str, ...] = ()  # `_STRUCTURAL` pseudo-classes it must be in
    negated: tuple[_Compound, ...] = ()  # `:not()`: compounds it must match none of
    states: tuple[str, ...] = ()  # `_STATES` pseudo-classes: a page at rest is in none, so it matches nothing

    @property
    def specificity(self) -> tuple[int, int, int]:
        """(ids, classes, types), a `:not()` counting as its most specific argument."""
        inner = max((c.specificity for c in self.negated), default=(0, 0, 0))
        return (
            len(self.ids) + inner[0],
            len(self.classes) + len(self.attributes) + len(self.structural) + len(self.states) + inner[1],
            (self.tag is not None) + inner[2],
        )

    def matches(self, element: Any) -> bool:
        if self.states or (self.tag is not None and element.name != self.tag):
            return False
        attrs = element.attrs
        if self.ids and any(attrs.get("id") != wanted for wanted in self.ids):
            return False
        if self.classes:
            have = attrs.get("class") or ()
            have = have.split() if isinstance(have, str) else have
            if not all(wanted in have for wanted in self.classes):
                return False
        return (
            all(attribute.matches(element) for attribute in self.attributes)
            and all(_structural(pseudo, element) for pseudo in self.structural)
            and not any(compound.matches(element) for compound in self.negated)
        )


_NEVER = "never"  # what `_selector` makes of a selector in a state a page at rest is never in (`a:hover .n`)


def _pseudo_class(name: str, argument: str | None) -> str | list[_Compound] | None:
    """What a pseudo-class asks of its element: its name for a state (`_STATES`) or a place among its
    siblings (`_STRUCTURAL`), the compounds it must match none of for `:not()`; None for one not read."""
    if (argument is None) == (name == "not"):
        return None
    if name in _STATES or name in _STRUCTURAL:
        return name
    if name != "not" or argument is None:
        return None
    negated = []
    for inner in _split_outside(argument, ",")[::2]:
        read = _compound(inner.strip())
        if read is None or read[1]:
            return None
        negated.append(read[0])  # ':not(:hover)' matches every element (its argument none)
    return negated


def _compound(text: str) -> tuple[_Compound, str] | None:
    """A compound selector and the pseudo-element it selects ('' for the element itself, 'before' or
    'after'); None for one not read."""
    at = 0
    tag = None
    if match := _TYPE.match(text):
        tag = None if match.group(0) == "*" else match.group(0).lower()
        at = match.end()
    ids: list[str] = []
    classes: list[str] = []
    attributes: list[_Attribute] = []
    structural: list[str] = []
    negated: list[_Compound] = []
    states: list[str] = []
    pseudo_element = ""
    while at < len(text):
        if pseudo_element:  # nothing is read after a pseudo-element
            return None
        if match := _CLASS_OR_ID.match(text, at):
            (ids if match.group(1) == "#" else classes).append(match.group(2))
        elif match := _ATTRIBUTE.match(text, at):
            value = next((v for v in match.group(3, 4, 5) if v is not None), "")
            flag = (match.group(6) or "").lower() == "i"
            attributes.append(_Attribute(match.group(1).lower(), match.group(2) or "", value, flag))
        elif match := _PSEUDO.match(text, at):
            name, argument = match.group(2).lower(), match.group(3)
            if name in _PSEUDO_ELEMENTS and argument is None:
                pseudo_element = name
            elif match.group(1) == "::" or (read := _pseudo_class(name, argument)) is None:
                return None
            elif isinstance(read, list):
                negated += read
            else:
                (states if name in _STATES else structural).append(read)
        else:
            return None
        at = match.end()
    if not text:
        return None
    compound = _Compound(
        tag, tuple(ids), tuple(classes), tuple(attributes), tuple(structural), tuple(negated), tuple(states)
    )
    return compound, pseudo_element


@dataclass(frozen=True)
class _Rule:
    parts: tuple[_Compound, ...]  # outermost first
    combinators: tuple[str, ...]  # between parts: " " (descendant), ">" (child), "+" or "~" (sibling)
    prop: str  # display, visibility, opacity, font-size, color, background, or a pseudo-element's content
    look: str  # what it makes of its element: `_look`
    rank: tuple[int, int, int, int, int]  # important, ids, classes, types, order: the larger wins
    pseudo: str = ""  # the pseudo-element it styles ('before', 'after'), '' for the element itself


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


def _split_outside(text: str, separators: str) -> list[str]:
    """`text` split at each of `separators` outside brackets, parentheses and quotes, each separator kept
    as a piece of its own: a selector list at its commas ('[title="a, b"]' and ':not(.a, .b)' stay whole),
    a selector at its combinators."""
    pieces: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth = max(depth - 1, 0)
        elif depth == 0 and ch in separators:
            pieces += ["".join(current), ch]
            current = []
            continue
        current.append(ch)
    pieces.append("".join(current))
    return pieces


_Selector = tuple[tuple[_Compound, ...], tuple[str, ...], str]


def _selector(text: str) -> _Selector | str | None:
    """A selector of compounds joined by descendant or child combinators, outermost first, with the
    pseudo-element its last compound selects ('' for none); `_NEVER` for one no page at rest matches
    (`a:hover .n`); None for any other (a sibling combinator, a pseudo-class not read)."""
    parts: list[_Compound] = []
    combinators: list[str] = []
    pending = " "
    never = False
    pseudo_element = ""
    for token in _split_outside(text.strip(), " \t\n\r\f>+~"):
        if not token.strip():
            continue
        if token in (">", "+", "~"):
            if not parts:
                return None
            pending = token
            continue
        if pseudo_element:  # a pseudo-element only ends a selector
            return None
        read = _compound(token)
        if read is None:
            return None
        compound, pseudo_element = read
        never = never or bool(compound.states)
        if parts:
            combinators.append(pending)
        parts.append(compound)
        pending = " "
    if not parts:
        return None
    return _NEVER if never else (tuple(parts), tuple(combinators), pseudo_element)


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
            if (
                ch in "\"'"
            ):  # a string (to its close or its line's end): a brace in it opens or closes nothing
                ends = [end for end in (text.find(ch, at + 1), text.find("\n", at + 1)) if end >= 0]
                at = min(ends, default=len(text) - 1) + 1
                continue
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
        declared = _declared(body)
        if not declared:
            continue
        for text in _split_outside(prelude, ",")[::2]:
            parsed = _selector(text)
            if parsed == _NEVER:
                continue
            if parsed is None:
                unplaced = unplaced or any(
                    (prop, look) == ("background", "ground") for prop, look, _ in declared
                )
                continue
            parts, combinators, pseudo = parsed  # type: ignore[misc]
            ids, classes, types = (sum(n) for n in zip(*(p.specificity for p in parts), strict=True))
            for prop, look, important in declared:
                if prop == "content" and not pseudo:  # an element's text is its own: content is a pseudo's
                    continue
                order += 1
                rank = (important, ids, classes, types + bool(pseudo), order)
                rules.append(_Rule(parts, combinators, prop, look, rank, pseudo))
                if len(rules) >= MAX_RULES:
                    return rules, True
    return rules, unplaced


# a `content` declaration, its strings whole (a ';' or '}' inside one ends nothing)
_CONTENT = re.compile(
    r"""(?:^|[;{\s])content\s*:\s*((?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^;"'])*)""", re.I
)


def _declared(body: str) -> list[tuple[str, str, bool]]:
    """(property, look, important) of each declaration of a rule's body that bears on what is seen
    (`_look`), and its `content` (the raw value) for a pseudo-element."""
    declared = []
    for prop, value in _DECLARATION.findall(_CONTENT.sub(";", body)):
        look = _look(prop.lower(), value)
        if look is not None:
            declared.append((*look, "!important" in re.sub(r"\s+", "", value.lower())))
    for value in _CONTENT.findall(body):
        important = bool(re.search(r"!\s*important\s*$", value, re.I))
        declared.append(("content", re.sub(r"!\s*important\s*$", "", value, flags=re.I).strip(), important))
    return declared


class TooComplex(Exception):
    """A page's style sheets would take more than `MAX_CHECKS` selector checks to apply."""


class _Budget:
    """Selector parts checked against elements so far, bounded: 1,000 rules each ending in `p` over
    50,000 paragraphs, each rule walking their ancestors, took 181 s of CPU unbounded."""

    def __init__(self) -> None:
        self.spent = 0
        # (compound, element) -> the nearest element at or before it among its siblings that the compound
        # matches (None: none): a `~` walk stops where an earlier one ended, so a page's walks are linear
        self.earlier: dict[tuple[int, int], Any] = {}

    def spend(self, steps: int) -> None:
        self.spent += steps
        if self.spent > MAX_CHECKS:
            raise TooComplex


def _outer_parts_match(rule: _Rule, element: Any, budget: _Budget) -> bool:
    """Whether the parts before a rule's last one match `element`'s ancestors, or for a sibling combinator
    its earlier siblings (nearest match first)."""
    current = element
    for index in range(len(rule.parts) - 2, -1, -1):
        compound, combinator = rule.parts[index], rule.combinators[index]
        if combinator in ("+", "~"):
            sibling = _earlier_sibling(current, compound, combinator == "~", budget)
            if sibling is None:
                return False
            current = sibling
            continue
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


def _previous_element(node: Any) -> Any | None:
    sibling = node.previous_sibling
    while sibling is not None and getattr(sibling, "name", None) is None:
        sibling = sibling.previous_sibling
    return sibling


def _earlier_sibling(element: Any, compound: _Compound, any_earlier: bool, budget: _Budget) -> Any | None:
    """The element sibling just before `element` if it matches `compound` (`+`), or with `any_earlier` the
    nearest earlier one that does (`~`); None where there is none."""
    sibling = _previous_element(element)
    if not any_earlier or sibling is None:
        budget.spend(1)
        return sibling if sibling is not None and compound.matches(sibling) else None
    walked: list[Any] = []
    found = None
    while sibling is not None:
        key = (id(compound), id(sibling))
        if key in budget.earlier:
            found = budget.earlier[key]
            break
        walked.append(sibling)
        if compound.matches(sibling):
            found = sibling
            break
        sibling = _previous_element(sibling)
    budget.spend(len(walked))
    for node in walked:
        budget.earlier[(id(compound), id(node))] = found
    return found


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


@dataclass
class _Index:
    """The rules by their last part's id, else its first class, else its type, else the first attribute it
    names; the rest match anything. An element is tried only against its own id's, classes', type's and
    attributes' rules, and those: 50 rules on `[data-…]` tried on each of 10,000 elements were past the
    budget."""

    by_id: dict[str, list[_Rule]]
    by_class: dict[str, list[_Rule]]
    by_tag: dict[str, list[_Rule]]
    by_attribute: dict[str, list[_Rule]]
    anywhere: list[_Rule]

    def candidates(self, element: Any, classes: list[str]) -> list[_Rule]:
        """The rules that may match an element."""
        attrs = element.attrs
        found = [*self.anywhere, *self.by_tag.get(element.name, ())]
        if attrs.get("id"):
            found += self.by_id.get(str(attrs["id"]), ())
        for class_name in dict.fromkeys(classes):
            found += self.by_class.get(class_name, ())
        if self.by_attribute:
            for attribute in attrs:
                found += self.by_attribute.get(attribute, ())
        return found


def _indexed(rules: list[_Rule]) -> _Index:
    """The rules indexed by what their last part must have (`_Index`)."""
    index = _Index({}, {}, {}, {}, [])
    for rule in rules:
        last = rule.parts[-1]
        if last.ids:
            index.by_id.setdefault(last.ids[0], []).append(rule)
        elif last.classes:
            index.by_class.setdefault(last.classes[0], []).append(rule)
        elif last.tag is not None:
            index.by_tag.setdefault(last.tag, []).append(rule)
        elif last.attributes:
            index.by_attribute.setdefault(last.attributes[0].name, []).append(rule)
        else:
            index.anywhere.append(rule)
    return index


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
    index = _indexed(rules)
    grounded: dict[int, bool] = {}  # element id -> whether a background is painted under it
    budget = _Budget()
    marked = 0
    try:
        for element in soup.find_all(True):
            attrs = element.attrs
            classes = attrs.get("class") or ()
            classes = classes.split() if isinstance(classes, str) else classes
            candidates = index.candidates(element, classes)
            winners: dict[tuple[str, str], _Rule] = {}  # (pseudo-element, property) -> the rule that wins
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
                    best = winners.get((rule.pseudo, rule.prop))
                    if best is None or rule.rank > best.rank:
                        winners[(rule.pseudo, rule.prop)] = rule
            looks = {prop: rule.look for (pseudo, prop), rule in winners.items() if not pseudo}
            inline = (
                _inline_looks(element)
                if attrs.get("style") or "bgcolor" in attrs or element.name == "font"
                else {}
            )
            looks.update(
                {
                    prop: look
                    for prop, look in inline.items()
                    if ("", prop) not in winners or not winners[("", prop)].rank[0]
                }
            )
            ground = looks.get("background") == "ground" or grounded.get(id(element.parent), False)
            grounded[id(element)] = ground
            if looks.get("display") == "show" and _hidden_by_attribute_alone(attrs):
                del attrs["hidden"]  # an author's display wins over the browser's own
            if "hide" in looks.values() or (judge_white and looks.get("color") == "white" and not ground):
                attrs["hidden"] = ""
                marked += 1
            elif "hidden" not in attrs and any(rule.pseudo for rule in winners.values()):
                _generate_content(element, winners)
    except TooComplex:
        raise IngestError(
            name,
            f"has style sheets too complex to apply safely (over {MAX_CHECKS:,} selector checks), so what they hide cannot be told.",
        ) from None
    return marked


def _hidden_by_attribute_alone(attrs: dict[str, Any]) -> bool:
    """Whether the `hidden` attribute hides an element as the browser's own `display: none` (which any
    author's `display` overrides), not as `hidden="until-found"` (hidden whatever its display)."""
    return "hidden" in attrs and str(attrs["hidden"]).strip().lower() != "until-found"


_VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())
_CONTENT_PART = re.compile(
    r"""attr\(\s*([-\w]+)\s*\)|[-\w]+\((?:[^()"']|"[^"]*"|'[^']*')*\)|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'"""
    r"|(open-quote|close-quote)|[^\s\"'(]+",
    re.IGNORECASE,
)
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n]?|\n|(.))")
_PSEUDO_HIDES = ("display", "visibility", "opacity", "font-size", "color")


def _css_unescaped(text: str) -> str:
    """A CSS string's escapes read ('\\201C' is a quotation mark, '\\A' a line break, '\\"' a quote)."""

    def one(match: re.Match[str]) -> str:
        if match.group(1):
            code = int(match.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else ""
        return match.group(2) or ""

    return _CSS_ESCAPE.sub(one, text)


def content_text(value: str, element: Any) -> str:
    """The text a `content` value puts on the page: its strings, the attributes `attr()` names, its quote
    marks; not counters, images or keywords. Icon fonts' private-use characters and controls, which show
    no letter, are left out."""
    pieces = []
    for match in _CONTENT_PART.finditer(value):
        attribute, double, single, quote = match.groups()
        if attribute is not None:
            pieces.append(str(element.attrs.get(attribute.lower(), "")))
        elif double is not None or single is not None:
            pieces.append(_css_unescaped(double if double is not None else single))
        elif quote is not None:
            pieces.append("\u201c" if quote.lower() == "open-quote" else "\u201d")
    text = "".join(pieces).replace("\n", " ")
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Co", "Cc", "Cs", "Cn"))


def _generate_content(element: Any, winners: dict[tuple[str, str], _Rule]) -> None:
    """Write the text of an element's `::before` and `::after` into it, where no rule hides them: a reader
    sees 'Note: ' before the paragraph a rule adds it to."""
    from bs4 import NavigableString

    if element.name in _VOID:  # an image, a line break: no pseudo-elements are drawn
        return
    for pseudo in ("before", "after"):
        rule = winners.get((pseudo, "content"))
        if rule is None or any(
            winners[(pseudo, prop)].look == "hide" for prop in _PSEUDO_HIDES if (pseudo, prop) in winners
        ):
            continue
        text = content_text(rule.look, element)
        if text.strip():
            if pseudo == "before":
                element.insert(0, NavigableString(text))
            else:
                element.append(NavigableString(text))
