"""Elements an HTML page's style sheets hide, found without a browser.

A page can hide text by a rule in its `<style>` (or, in an e-book, a linked .css file) rather than in the
element's own `style` attribute: `.note { display: none }` hides every `<div class="note">`, and its words,
which no reader of the page sees, were read as the page's text (an instruction to an LLM among them). This
module reads the rules that decide whether an element is shown — `display`, `visibility`, `opacity`,
`font-size`, a `transparent` colour, and a box that puts its text out of sight (moved far off the page,
clipped or scaled to nothing, of no height with its overflow hidden: `_box_hides`) — and applies them as a
browser's cascade does: the declaration of the most specific selector wins, a later one wins a tie,
`!important` wins over both, and the element's own `style` attribute over any rule not marked important.
So `.tab { display: none }` then `.tab.active { display: block }` hides every tab but the active one. A
box is judged by each rule's declarations together (`position: absolute` in one rule and `left: -9999px`
in another are not put together), and a rule that undoes such a box (`left: 0`, `clip: auto`) shows it.

Selectors are matched by this module in one pass over the page's elements (soupsieve's `select` cost
28 us an element for each selector: a page of 100,000 elements and 50 rules would take over two minutes).
A selector is read when it is made of type, class, id and attribute selectors (`[hidden]`,
`[aria-hidden="true"]`, `[style*="display:none" i]`) and the pseudo-classes `:not()`, `:first-child`,
`:last-child`, `:only-child`, their `-of-type` kin, `:nth-child(an+b)` and its kin, `:root` and `:link`,
joined by descendant (` `), child (`>`) or sibling (`+`, `~`) combinators; a pseudo-class of a state the
reader of a page at rest never puts it in (`:hover`, `:focus`, `:target`) makes its selector match
nothing. A pseudo-class whose argument is a selector this module does not match itself (`:has()`, `:is()`,
`:where()`, `:not(div p)`, `:nth-child(2n of .row)`) is matched by soupsieve on the elements the rest of
its selector picks, its cost counted against the page's bound. A `::before` or `::after` rule's `content`
('Note: ', a quote mark, `attr(title)`) is text the reader sees, so it is written into its element unless
the rule hides it; a rule hiding only the pseudo-element leaves its element shown. An author's `display`
shows an element the `hidden` attribute hides (that attribute is only the browser's own `display: none`).
Rules inside `@media` blocks other than `screen` or `all`, and style sheets for print, are left out too: a
rule for print or a narrow screen is not what a reader of the page on a screen sees.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ..errors import IngestError

# box declarations cascaded one by one at most (`_box_part`); past it, judged a rule at a time
MAX_SPLIT_BOX_DECLARATIONS = 500
MAX_RULES = 2_000  # selectors with a declaration that bears on being seen, read from one page's style sheets
MAX_CSS_CHARS = 2_000_000  # of style sheet text read for one page
MAX_ANCESTORS = 200  # ancestors looked at to match a selector's outer parts
MAX_CHECKS = 500_000  # rules tried on elements and ancestors walked, for one page (about 3 s of CPU; 300 real
# styled pages of documentation took at most 4,212)
SCRIPTED_WEIGHT = 4  # checks an element soupsieve visits counts as (about 7 us: four of this module's)

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
_PSEUDO_NAME = re.compile(r"(::?)([-a-zA-Z]+)")
_PSEUDO_ELEMENTS = frozenset({"before", "after"})
# pseudo-classes of a state a page at rest is never in: a rule on them shows or hides nothing a reader sees
_STATES = frozenset(
    "hover focus focus-within focus-visible active visited target target-within checked indeterminate "
    "user-invalid user-valid playing paused fullscreen picture-in-picture modal popover-open open".split()
)
_STRUCTURAL = frozenset(
    "first-child last-child only-child first-of-type last-of-type only-of-type root link any-link".split()
)
_NTH = frozenset({"nth-child", "nth-last-child", "nth-of-type", "nth-last-of-type"})
# pseudo-classes whose argument is a selector (or `an+b of S`): matched by soupsieve (`_Scripted`)
_SCRIPTED = _NTH | {"has", "is", "where", "matches", "any", "-webkit-any", "-moz-any", "not", "lang", "dir"}
_AN_PLUS_B = re.compile(r"\s*(?:(odd)|(even)|([+-]?\d*)n(?:\s*([+-])\s*(\d+))?|([+-]?\d+))\s*", re.IGNORECASE)


def _pseudo_at(text: str, at: int) -> tuple[str, str, str | None, int] | None:
    """The pseudo-class or pseudo-element at `at` of a compound: its colons, its name in lower case, its
    argument (None without parentheses; nested parentheses and quoted strings kept whole: `:not(:nth-child(2))`)
    and where it ends; None where none is, or its parenthesis is never closed."""
    match = _PSEUDO_NAME.match(text, at)
    if match is None:
        return None
    start = match.end()
    if text[start : start + 1] != "(":
        return match.group(1), match.group(2).lower(), None, start
    depth, quote = 0, ""
    for index in range(start, len(text)):
        ch = text[index]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return match.group(1), match.group(2).lower(), text[start + 1 : index], index + 1
    return None


@dataclass(frozen=True)
class _Nth:
    """`:nth-child(an+b)` and its kin: the element's place among its element siblings (counted from the
    last with `-last-`, among those of its own tag with `-of-type`) is a*n+b for some n >= 0."""

    step: int
    offset: int
    from_end: bool
    of_type: bool

    def matches(self, element: Any, budget: _Budget) -> bool:
        place = budget.place(element, self.from_end, self.of_type)
        if self.step == 0:
            return place == self.offset
        n, rest = divmod(place - self.offset, self.step)
        return rest == 0 and n >= 0


def _nth(name: str, argument: str) -> _Nth | None:
    """An `an+b` argument read (`odd`, `even`, `-n+3`, `2n + 1`, `4`); None for another (`2n of .row`)."""
    match = _AN_PLUS_B.fullmatch(argument)
    if match is None:
        return None
    odd, even, step, sign, offset, alone = match.groups()
    if odd or even:
        a, b = 2, 1 if odd else 0
    elif alone is not None:
        a, b = 0, int(alone)
    else:
        a = int(f"{step}1") if step in ("", "+", "-") else int(step)
        b = int(f"{sign}{offset}") if sign else 0
    return _Nth(a, b, "-last-" in name, name.endswith("-of-type"))


@dataclass(frozen=True)
class _Scripted:
    """A pseudo-class whose argument is a selector this module does not match itself (`:has(> .flag)`,
    `:is(.a .b)`, `:not(div p)`, `:nth-child(2n of .row)`): soupsieve matches it. Its cost is counted as
    the elements such a match may visit: the element's subtree for `:has()`, its ancestors otherwise."""

    pattern: Any
    has: bool
    specificity: tuple[int, int, int]

    def matches(self, element: Any, budget: _Budget) -> bool:
        budget.spend(SCRIPTED_WEIGHT * budget.reach(element, subtree=self.has))
        try:
            return bool(self.pattern.match(element))
        except RecursionError:
            raise TooComplex from None


def _scripted(name: str, argument: str) -> _Scripted | None:
    """`:name(argument)` compiled by soupsieve; None for a selector it cannot read either."""
    import soupsieve

    try:
        pattern = soupsieve.compile(f":{name}({argument})")
    except (soupsieve.SelectorSyntaxError, NotImplementedError, ValueError):
        return None
    return _Scripted(pattern, name == "has", _argument_specificity(name, argument))


def _argument_specificity(name: str, argument: str) -> tuple[int, int, int]:
    """A functional pseudo-class's specificity: none for `:where()`; `:nth-child(an+b of S)` one class more
    than S; the others their most specific argument."""
    if name == "where":
        return (0, 0, 0)
    if name in _NTH:
        of = re.search(r"\sof\s", argument, re.IGNORECASE)
        inner = _list_specificity(argument[of.end() :]) if of else (0, 0, 0)
        return (inner[0], inner[1] + 1, inner[2])
    return _list_specificity(argument)


def _list_specificity(text: str) -> tuple[int, int, int]:
    """The specificity of the most specific selector of a list (a relative one's combinator set aside); a
    selector this module does not read counts as a class."""
    best = (0, 0, 0)
    for piece in _split_outside(text, ",")[::2]:
        parsed = _selector(piece.strip().lstrip(">+~").strip())
        if isinstance(parsed, tuple):
            found = tuple(sum(n) for n in zip(*(part.specificity for part in parsed[0]), strict=True))
        else:
            found = (0, 1, 0)
        best = max(best, found)  # type: ignore[type-var]
    return best


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
    # `:nth-child()`, `:has()` and the other pseudo-classes with an argument it must match
    functions: tuple[_Nth | _Scripted, ...] = ()

    @property
    def specificity(self) -> tuple[int, int, int]:
        """(ids, classes, types), a `:not()` counting as its most specific argument."""
        inner = max((c.specificity for c in self.negated), default=(0, 0, 0))
        called = [f.specificity if isinstance(f, _Scripted) else (0, 1, 0) for f in self.functions]
        ids, classes, types = (sum(n) for n in zip(inner, *called, strict=True))
        return (
            len(self.ids) + ids,
            len(self.classes) + len(self.attributes) + len(self.structural) + len(self.states) + classes,
            (self.tag is not None) + types,
        )

    def matches(self, element: Any, budget: _Budget) -> bool:
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
            and not any(compound.matches(element, budget) for compound in self.negated)
            and all(function.matches(element, budget) for function in self.functions)
        )


_NEVER = "never"  # what `_selector` makes of a selector in a state a page at rest is never in (`a:hover .n`)


def _pseudo_class(name: str, argument: str | None) -> str | list[_Compound] | _Nth | _Scripted | None:
    """What a pseudo-class asks of its element: its name for a state (`_STATES`) or a place among its
    siblings (`_STRUCTURAL`), the compounds it must match none of for a `:not()` of compounds, an `_Nth`
    for `:nth-child(an+b)` and its kin, a `_Scripted` match for the other pseudo-classes with a selector
    argument (`:has()`, `:is()`, `:not(div p)`); None for one not read."""
    if argument is None:
        return name if name in _STATES or name in _STRUCTURAL else None
    if name in _NTH and (nth := _nth(name, argument)) is not None:
        return nth
    if name == "not":
        negated = []
        for inner in _split_outside(argument, ",")[::2]:
            read = _compound(inner.strip())
            if read is None or read[1]:
                break
            negated.append(read[0])  # ':not(:hover)' matches every element (its argument none)
        else:
            return negated
    return _scripted(name, argument) if name in _SCRIPTED else None


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
    functions: list[_Nth | _Scripted] = []
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
        elif pseudo := _pseudo_at(text, at):
            colons, name, argument, end = pseudo
            if name in _PSEUDO_ELEMENTS and argument is None:
                pseudo_element = name
            elif colons == "::" or (read := _pseudo_class(name, argument)) is None:
                return None
            elif isinstance(read, list):
                negated += read
            elif isinstance(read, (_Nth, _Scripted)):
                functions.append(read)
            else:
                (states if name in _STATES else structural).append(read)
            at = end
            continue
        else:
            return None
        at = match.end()
    if not text:
        return None
    compound = _Compound(
        tag,
        tuple(ids),
        tuple(classes),
        tuple(attributes),
        tuple(structural),
        tuple(negated),
        tuple(states),
        tuple(functions),
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
    colour, `content-visibility: hidden`, `filter: opacity(0)`), "show" (the same property set otherwise),
    "white" (white letters: seen only on a ground), "ground" (a background that is not white) or "plain" (a
    white or no background)."""
    value = re.sub(r"!\s*important", "", value, flags=re.IGNORECASE).strip().lower()
    if prop in _GROUND_PROPS:
        return "background", "plain" if _PLAIN_GROUND.fullmatch(value) else "ground"
    if prop == "display":
        hides = value == "none"
    elif prop == "visibility":
        hides = value in ("hidden", "collapse")
    elif prop == "opacity":  # 0.02 and less: nothing a reader sees ('opacity: 0.01' hides as 0 does)
        hides = bool(_ZERO.fullmatch(value)) or _fraction(value) <= MAX_UNSEEN_OPACITY
    elif prop == "font-size":  # a point and less: too small to read, as Word's runs of 1 pt are
        hides = bool(_ZERO.fullmatch(value)) or _font_px(value) <= MAX_UNSEEN_FONT_PX
    elif prop == "content-visibility":  # its content is not drawn, as with display: none
        hides = value == "hidden"
    elif prop == "filter":
        hides = bool(re.search(r"opacity\(\s*[+]?(?:0+(?:\.0*)?|\.0+)%?\s*\)", value))
    elif prop == "color":
        compact = re.sub(r"\s+", "", value)
        if _WHITE.fullmatch(compact):
            return prop, "white"
        hides = bool(_TRANSPARENT.fullmatch(compact))
    else:
        return None
    return prop, "hide" if hides else "show"


# what a box may say that puts its text where no reader sees it (`_box_hides`), and the values that undo it
_BOX_RESETS = {
    "position": ("static",), "clip": ("auto",), "clip-path": ("none",), "transform": ("none",),
    "scale": ("none", "1"), "overflow": ("visible",), "overflow-x": ("visible",), "overflow-y": ("visible",),
    "width": ("auto",), "height": ("auto",), "max-width": ("none",), "max-height": ("none",),
    "left": ("0", "0px", "auto"), "top": ("0", "0px", "auto"), "right": ("0", "0px", "auto"),
    "bottom": ("0", "0px", "auto"), "inset": ("0", "0px", "auto"), "text-indent": ("0", "0px"),
    "margin-left": ("0", "0px", "auto"), "margin-top": ("0", "0px", "auto"),
}  # fmt: skip
_LENGTH = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))\s*([a-z%]*)")
# CSS pixels in a unit, roughly: an em of 16 px, a percentage or a viewport unit of a 1,000-pixel page
_PX = {"": 1, "px": 1, "pt": 4 / 3, "pc": 16, "em": 16, "rem": 16, "ch": 8, "ex": 8, "cm": 37.8, "mm": 3.78,
       "q": 0.95, "in": 96, "vw": 10, "vh": 8, "vmin": 8, "vmax": 10, "%": 10}  # fmt: skip
FAR_PX = 999  # an offset this far past the page's left or top edge is off it: the -9999px of off-screen text


MAX_UNSEEN_OPACITY = 0.02  # an opacity a reader sees nothing at
MAX_UNSEEN_FONT_PX = 4 / 3  # a font size too small to read: a point (Word's runs of 1 pt are left out too)


def _fraction(value: str) -> float:
    """An opacity as a fraction (`0.01`, `1%`); 1 for a keyword or nothing."""
    match = re.fullmatch(r"[+]?(\d*\.?\d+)\s*(%?)", value)
    return 1.0 if match is None else float(match.group(1)) / (100 if match.group(2) else 1)


def _font_px(value: str) -> float:
    """A font size in CSS pixels, its `em`, `rem` or percentage of a 16 px parent; large for a keyword, a
    viewport unit or a number without a unit (which a browser ignores)."""
    match = _LENGTH.fullmatch(value)
    if match is None:
        return float("inf")
    unit = match.group(2)
    factor = 0.16 if unit == "%" else _PX.get(unit)
    if factor is None or unit in ("", "vw", "vh", "vmin", "vmax"):  # a number alone is no size: ignored
        return float("inf")
    return float(match.group(1)) * factor


def _px(value: str | None) -> float | None:
    """A value's first length in CSS pixels (`_PX`); None for a keyword or nothing."""
    match = _LENGTH.match(value or "")
    factor = _PX.get(match.group(2)) if match else None
    return None if match is None or factor is None else float(match.group(1)) * factor


def _collapsed(transform: str, scale: str) -> bool:
    """Whether a transform scales its box to nothing on an axis (`scale(0)`, `scaleY(0)`, `scale: 0`) or
    moves it off the page (`translateX(-9999px)`)."""
    if _px(scale) == 0:
        return True
    for function, arguments in re.findall(r"(scale|translate)[xyz3d]*\(([^()]*)\)", transform):
        values = [_px(value) for value in re.split(r"[\s,]+", arguments.strip())]
        if function == "scale" and 0 in values:
            return True
        if function == "translate" and any(value is not None and value <= -FAR_PX for value in values):
            return True
    return False


def _clipped(clip: str, clip_path: str, positioned: bool) -> bool:
    """Whether a clip leaves nothing of its box: `clip-path: inset(50%)`, a circle of no radius, or on an
    absolutely placed box `clip: rect(0 0 0 0)` (a rectangle of no area)."""
    if inset := re.match(r"inset\(\s*([\d.]+)%", clip_path):
        if float(inset.group(1)) >= 50:
            return True
    if re.match(r"(?:circle|ellipse)\(\s*0(?:px|%)?[\s)]", clip_path):
        return True
    if polygon := re.match(r"polygon\(([^()]*)\)", clip_path):  # every corner at one point
        if len({" ".join(corner.split()) for corner in polygon.group(1).split(",")}) == 1:
            return True
    rect = re.match(r"rect\(([^()]*)\)", clip)
    if not positioned or rect is None:
        return False
    sides = [_px(side) for side in re.split(r"[\s,]+", rect.group(1).strip())]
    if len(sides) != 4 or None in sides:
        return False
    top, right, bottom, left = sides
    return bottom <= top or right <= left  # type: ignore[operator]


def _box_hides(said: dict[str, str]) -> bool:
    """Whether a box's properties put its text where no reader sees it: moved far off the page's left or
    top edge (`position: absolute; left: -9999px`, `text-indent: -9999px`), clipped to nothing, scaled to
    nothing, or a box of no height (or of a pixel each way) that hides its overflow."""
    position = said.get("position", "static")
    if _collapsed(said.get("transform", ""), said.get("scale", "")):
        return True
    if _clipped(said.get("clip", ""), said.get("clip-path", ""), position in ("absolute", "fixed")):
        return True
    offsets = ["text-indent", "margin-left", "margin-top"]
    if position != "static":
        offsets += ["left", "top", "inset"]
    if any((_px(said.get(prop)) or 0) <= -FAR_PX for prop in offsets):
        return True
    if not any(said.get(prop) in ("hidden", "clip") for prop in ("overflow", "overflow-x", "overflow-y")):
        return False
    width, height = (
        min((v for v in (_px(said.get(prop)), _px(said.get(f"max-{prop}"))) if v is not None), default=None)
        for prop in ("width", "height")
    )
    return 0 in (width, height) or (width is not None and height is not None and max(width, height) <= 1)


def _box_said(body: str) -> dict[str, tuple[str, bool]]:
    """A declaration block's box properties (`_BOX_RESETS`): each one's value and whether it is important."""
    said: dict[str, tuple[str, bool]] = {}
    for prop, value in _DECLARATION.findall(body):
        if prop.lower() in _BOX_RESETS:
            important = bool(re.search(r"!\s*important", value, re.IGNORECASE))
            said[prop.lower()] = (
                re.sub(r"!\s*important", "", value, flags=re.IGNORECASE).strip().lower(),
                important,
            )
    return said


def _box_part(body: str) -> bool:
    """Whether a declaration block holds part of a box that hides, not the whole: an offset far off the page
    or a clip of no area without the `position` that makes it one (`.far { left: -9999px }` beside `.abs {
    position: absolute }`). Then a page's box properties are cascaded one by one (`_rules`)."""
    said = {prop: value for prop, (value, _) in _box_said(body).items()}
    if not said or _box_hides(said):
        return False
    offsets = ("left", "top", "inset", "text-indent", "margin-left", "margin-top")
    far = any((_px(said.get(prop)) or 0) <= -FAR_PX for prop in offsets)
    return far or _clipped(said.get("clip", ""), "", positioned=True)


def _box_look(body: str) -> tuple[str, bool] | None:
    """("hide", important) for a declaration block whose box hides its text (`_box_hides`), ("show",
    important) for one that undoes such a box (`position: static`, `clip: auto`, `left: 0`), None for one
    that says neither."""
    declared = _box_said(body)
    if not declared:
        return None
    said = {prop: value for prop, (value, _) in declared.items()}
    important = any(important for _, important in declared.values())
    if _box_hides(said):
        return "hide", important
    return ("show", important) if any(value in _BOX_RESETS[prop] for prop, value in said.items()) else None


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


def _rules(css: str) -> tuple[list[_Rule], bool, bool]:
    """The rules of `css` whose declarations bear on whether an element is seen, a rule a selector;
    whether a background is painted where these rules cannot place it (a selector not read, an at-rule
    skipped, the rules' cap reached), so that white letters may stand on it; and whether its box
    properties are cascaded one by one (`_box_part`) rather than judged a block at a time."""
    rules: list[_Rule] = []
    order = 0
    blocks, skipped = _top_level_blocks(_COMMENT.sub(" ", css[:MAX_CSS_CHARS]))
    unplaced = len(css) > MAX_CSS_CHARS or any(_paints_ground(body) for body in skipped)
    boxes = any(look[0] == "hide" for _, body in blocks if (look := _box_look(body)))
    # box properties one by one where some rule holds part of a box (and they are few enough to leave room
    # for the rest under MAX_RULES: a framework's thousands of widths and positions would crowd them out)
    split = any(_box_part(body) for _, body in blocks)
    split = split and sum(len(_box_said(body)) for _, body in blocks) <= MAX_SPLIT_BOX_DECLARATIONS
    for prelude, body in blocks:
        declared = _declared(body, boxes=boxes, split=split)
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
                    return rules, True, split
    return rules, unplaced, split


# a `content` declaration, its strings whole (a ';' or '}' inside one ends nothing)
_CONTENT = re.compile(
    r"""(?:^|[;{\s])content\s*:\s*((?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^;"'])*)""", re.I
)


def _declared(body: str, *, boxes: bool = False, split: bool = False) -> list[tuple[str, str, bool]]:
    """(property, look, important) of each declaration of a rule's body that bears on what is seen
    (`_look`), its `content` (the raw value) for a pseudo-element, and ("box", look, important) for a body
    whose box hides its text, or undoes such a box where the page's rules hide by a box (`boxes`); with
    `split`, each box property instead, as ("box:left", "=-9999px", important), judged together per
    element (`_box_looks`)."""
    declared = []
    if split:
        declared += [
            (f"box:{prop}", f"={value}", important) for prop, (value, important) in _box_said(body).items()
        ]
    elif (box := _box_look(body)) is not None and (box[0] == "hide" or boxes):
        declared.append(("box", *box))
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
        # parent id -> child id -> its places among its element siblings (`place`), counted once a parent
        self.places: dict[int, dict[int, tuple[int, int, int, int]]] = {}
        self.sizes: dict[int, int] = {}  # element id -> elements in its subtree, itself included (`reach`)
        self.depths: dict[int, int] = {}  # element id -> its ancestors' count

    def spend(self, steps: int) -> None:
        self.spent += steps
        if self.spent > MAX_CHECKS:
            raise TooComplex

    def place(self, element: Any, from_end: bool, of_type: bool) -> int:
        """An element's place (1 the first) among its parent's element children, from the last with
        `from_end`, among those of its tag with `of_type`: counted for all its siblings at once, so a list
        of 50,000 items with an `li:nth-child(2n)` rule is walked once, not once an item."""
        parent = element.parent
        places = self.places.get(id(parent))
        if places is None:
            siblings = [c for c in parent.children if getattr(c, "name", None)] if parent else [element]
            self.spend(len(siblings))
            totals = Counter(sibling.name for sibling in siblings)
            seen: Counter[str] = Counter()
            places = {}
            for index, sibling in enumerate(siblings):
                seen[sibling.name] += 1
                of = seen[sibling.name]
                places[id(sibling)] = (index + 1, of, len(siblings) - index, totals[sibling.name] - of + 1)
            self.places[id(parent)] = places
        first, first_of_type, last, last_of_type = places[id(element)]
        if of_type:
            return last_of_type if from_end else first_of_type
        return last if from_end else first

    def reach(self, element: Any, *, subtree: bool) -> int:
        """How many elements a match on `element` may visit: its subtree, or its ancestors (and itself),
        all counted in one pass over the page the first time."""
        if not self.sizes:
            root = element
            while root.parent is not None:
                root = root.parent
            elements = [root, *root.find_all(True)]
            for each in elements:
                self.depths[id(each)] = self.depths.get(id(each.parent), 0) + 1
            self.sizes = dict.fromkeys(map(id, elements), 1)
            for each in reversed(elements[1:]):
                self.sizes[id(each.parent)] += self.sizes[id(each)]
            self.spend(len(elements))
        return self.sizes.get(id(element), 1) if subtree else self.depths.get(id(element), 1)


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
            if parent is None or parent.name == "[document]" or not compound.matches(parent, budget):
                return False
            current = parent
            continue
        steps = 0
        while parent is not None and parent.name != "[document]" and steps < MAX_ANCESTORS:
            if compound.matches(parent, budget):
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
        return sibling if sibling is not None and compound.matches(sibling, budget) else None
    walked: list[Any] = []
    found = None
    while sibling is not None:
        key = (id(compound), id(sibling))
        if key in budget.earlier:
            found = budget.earlier[key]
            break
        walked.append(sibling)
        if compound.matches(sibling, budget):
            found = sibling
            break
        sibling = _previous_element(sibling)
    budget.spend(len(walked))
    for node in walked:
        budget.earlier[(id(compound), id(node))] = found
    return found


def _box_looks(looks: dict[str, str]) -> dict[str, str]:
    """An element's looks with its box properties cascaded one by one (`box:left` and its kin, `_declared`
    with `split`) judged together as one "box" look."""
    said = {prop[4:]: look[1:] for prop, look in looks.items() if prop.startswith("box:")}
    if not said:
        return looks
    kept = {prop: look for prop, look in looks.items() if not prop.startswith("box:")}
    if _box_hides(said):
        kept["box"] = "hide"
    return kept


def _inline_looks(element: Any, *, split: bool = False) -> dict[str, str]:
    """What the element's own style attribute says, property by property (`_look`), with the colour and
    background its old attributes set (`<font color>`, `bgcolor`), which any style overrides."""
    looks: dict[str, str] = {}
    for attribute, prop in (("color", "color"), ("bgcolor", "background")):
        if element.attrs.get(attribute) and (element.name == "font" or attribute == "bgcolor"):
            said = _look(prop if prop == "color" else "background-color", str(element.attrs[attribute]))
            if said is not None:
                looks[said[0]] = said[1]
    style = str(element.attrs.get("style") or "")
    for name, value in _DECLARATION.findall(style):
        said = _look(name.lower(), value)
        if said is not None:
            looks[said[0]] = said[1]
    if split:
        looks.update({f"box:{prop}": f"={value}" for prop, (value, _) in _box_said(style).items()})
    elif box := _box_look(style):
        looks["box"] = box[0]
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


# `@import url("site.css") screen;` in a page's own style sheet: a sheet the upload lacks, as a linked one
_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?["']?([^"'()\s;]+)["']?\s*\)?\s*([^;{}]*);""", re.IGNORECASE)


def _sheet_name(href: str) -> str:
    """A style sheet's file name from its address ('site.css' of '/static/css/site.css?v=3')."""
    return href.split("?")[0].split("#")[0].rstrip("/").rsplit("/", 1)[-1] or href


def linked_sheets(soup: Any) -> list[str]:
    """The names of the screen style sheets a page links (`<link rel="stylesheet" href="site.css">`) or its
    own style sheets import (`@import url(site.css)`): an upload of the page alone lacks them, so what they
    hide or show cannot be told."""
    names = []
    for link in soup.find_all("link"):
        href = str(link.get("href") or "").strip()
        if (
            _links_sheet(link)
            and href
            and not href.startswith("data:")
            and not print_only(str(link.get("media") or ""))
        ):
            names.append(_sheet_name(href))
    for href, media in _IMPORT.findall(_COMMENT.sub(" ", style_sheets(soup))):
        if not href.startswith("data:") and not print_only(media):
            names.append(_sheet_name(href))
    return list(dict.fromkeys(names))


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
    rules, unplaced_ground, split = _rules(f"{extra_css}\n{style_sheets(soup)}")
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
                    matched[key] = rule.parts[-1].matches(element, budget) and _outer_parts_match(
                        rule, element, budget
                    )
                if matched[key]:
                    best = winners.get((rule.pseudo, rule.prop))
                    if best is None or rule.rank > best.rank:
                        winners[(rule.pseudo, rule.prop)] = rule
            looks = {prop: rule.look for (pseudo, prop), rule in winners.items() if not pseudo}
            inline = (
                _inline_looks(element, split=split)
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
            looks = _box_looks(looks) if split else looks
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
_PSEUDO_HIDES = ("display", "visibility", "opacity", "font-size", "color", "content-visibility", "filter")


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
