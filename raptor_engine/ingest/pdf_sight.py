"""Which of a PDF page's text a viewer shows.

A PDF can carry text nobody reading it sees, and such text can carry instructions for whatever reads
the file next (the summariser): text in render mode 3 or 7, text filled white on a white ground (the
blank page, a white rectangle or a white picture under it), text placed outside the page's box or
outside the clipping path in force, in the page's own content or in a form XObject it draws. This
module walks a page's content as a viewer does, far enough to tell where each string lands and on what
ground, and blanks the strings no viewer shows; the operators stay, so lines break where they did.

Only geometry a viewer needs for that is followed: the current transformation, the clipping path's box,
the text matrix and an estimate of each string's width (half an em a glyph, as no font widths are
read: a wide estimate errs on the side of reading text). Text under a shape painted later stays read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

log = logging.getLogger(__name__)

Matrix = tuple[float, float, float, float, float, float]
Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in the page's space

_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
_SHOW_TEXT = (b"Tj", b"TJ", b"'", b'"')
_FILL = (b"f", b"F", b"f*", b"B", b"B*", b"b", b"b*")
_END_PATH = (*_FILL, b"S", b"s", b"n")
_DEVICE_SPACES = {"/DeviceGray": "gray", "/G": "gray", "/DeviceRGB": "rgb", "/RGB": "rgb",
                  "/DeviceCMYK": "cmyk", "/CMYK": "cmyk"}  # fmt: skip
_ICC_SPACES = {1: "gray", 3: "rgb", 4: "cmyk"}
_WHITE = {"gray": [1.0], "rgb": [1.0, 1.0, 1.0], "cmyk": [0.0, 0.0, 0.0, 0.0]}
_GLYPH_WIDTH = 0.5  # of the font size: an average glyph, wide enough for most text
MAX_FORMS = 1_000  # form XObjects walked on one page (a form may draw forms that draw forms)
MAX_DEPTH = 12  # forms inside forms
_PICTURE_CHECK_BYTES = 1 << 24  # a picture bigger than this, decoded, is not checked for being all white


def _times(m: Matrix, n: Matrix) -> Matrix:
    """`m` then `n` (PDF's m × n)."""
    a, b, c, d, e, f = m
    p, q, r, s, t, u = n
    return (a * p + b * r, a * q + b * s, c * p + d * r, c * q + d * s, e * p + f * r + t, e * q + f * s + u)


def _box(matrix: Matrix, x0: float, y0: float, x1: float, y1: float) -> Box:
    """The box, in the page's space, that a box in `matrix`'s space lands in."""
    a, b, c, d, e, f = matrix
    xs = [a * x + c * y + e for x in (x0, x1) for y in (y0, y1)]
    ys = [b * x + d * y + f for x in (x0, x1) for y in (y0, y1)]
    return (min(xs), min(ys), max(xs), max(ys))


def _meet(a: Box, b: Box) -> Box:
    return (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _holds(box: Box, x: float, y: float) -> bool:
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def _numbers(operands: list[Any]) -> list[float] | None:
    try:
        return [float(v) for v in operands]
    except (TypeError, ValueError):  # a pattern's or a colour's name
        return None


@dataclass
class _State:
    """The graphics state a viewer saves with `q`: what decides where text lands and whether it shows."""

    ctm: Matrix
    clip: Box
    space: str | None = "gray"  # the fill colour space: gray, rgb, cmyk, or another (never white)
    white: bool = False
    mode: int = 0  # text render mode
    size: float = 0.0
    leading: float = 0.0
    scale: float = 1.0
    char_spacing: float = 0.0
    word_spacing: float = 0.0


@dataclass
class _Text:
    """Text object state (BT…ET): not saved by `q`."""

    matrix: Matrix = _IDENTITY
    line: Matrix = _IDENTITY


class PageSight:
    """Walks one page's content (and the forms it draws) and blanks the text a viewer would not show."""

    def __init__(self, page_box: Box, pictures: bool, pdf: Any) -> None:
        self.page_box = page_box
        self.pictures = pictures  # a picture on the page: invisible text over it is a scan's OCR layer
        self.pdf = pdf
        self.grounds: list[tuple[Box, bool]] = []  # what was painted, in order, and whether white
        self.blanked = 0
        self.forms = 0

    def walk(self, operations: list[tuple[Any, bytes]], resources: Any, state: _State, depth: int = 0) -> int:
        """Follow `operations`, blanking unseen strings in place; returns how many were blanked."""
        before = self.blanked
        saved: list[_State] = []
        text = _Text()
        path: list[tuple[float, float]] = []
        clipping = False
        for operands, operator in operations:
            if operator in _SHOW_TEXT:
                self._show(operands, operator, state, text)
            elif operator in (b"Td", b"TD", b"T*", b"Tm", b"BT", b"Tf", b"TL", b"Tz", b"Tc", b"Tw", b"Tr"):
                self._text_state(operands, operator, state, text)
            elif operator == b"q":
                saved.append(replace(state))
            elif operator == b"Q":
                if saved:
                    state = saved.pop()
            elif operator == b"cm":
                values = _numbers(operands)
                if values and len(values) == 6:
                    state.ctm = _times(tuple(values), state.ctm)  # type: ignore[arg-type]
            elif operator in (b"g", b"rg", b"k", b"sc", b"scn", b"cs"):
                self._colour(operands, operator, state, resources)
            elif operator in (b"m", b"l", b"c", b"v", b"y", b"re"):
                _extend(path, operands, operator, state.ctm)
            elif operator in (b"W", b"W*"):
                clipping = True
            elif operator in _END_PATH:
                if path:
                    xs, ys = [p[0] for p in path], [p[1] for p in path]
                    area = (min(xs), min(ys), max(xs), max(ys))
                    if operator in _FILL:
                        self.grounds.append((_meet(area, state.clip), state.white))
                    if clipping:
                        state.clip = _meet(state.clip, area)
                path, clipping = [], False
            elif operator == b"sh":
                self.grounds.append((state.clip, False))
            elif operator == b"INLINE IMAGE":
                self.grounds.append((_meet(_box(state.ctm, 0, 0, 1, 1), state.clip), False))
            elif operator == b"Do" and operands:
                self._draw(str(operands[0]), resources, state, depth)
        return self.blanked - before

    def _text_state(self, operands: list[Any], operator: bytes, state: _State, text: _Text) -> None:
        values = _numbers(operands) or []
        if operator == b"BT":
            text.matrix = text.line = _IDENTITY
        elif operator == b"Tm" and len(values) == 6:
            text.matrix = text.line = tuple(values)  # type: ignore[assignment]
        elif operator in (b"Td", b"TD") and len(values) == 2:
            if operator == b"TD":
                state.leading = -values[1]
            text.matrix = text.line = _times((1.0, 0.0, 0.0, 1.0, values[0], values[1]), text.line)
        elif operator == b"T*":
            text.matrix = text.line = _times((1.0, 0.0, 0.0, 1.0, 0.0, -state.leading), text.line)
        elif operator == b"Tf" and len(operands) == 2:
            size = _numbers(operands[1:])
            state.size = size[0] if size else state.size
        elif operator == b"Tr" and len(values) == 1:
            state.mode = int(values[0])
        elif len(values) == 1:
            if operator == b"TL":
                state.leading = values[0]
            elif operator == b"Tz":
                state.scale = values[0] / 100
            elif operator == b"Tc":
                state.char_spacing = values[0]
            elif operator == b"Tw":
                state.word_spacing = values[0]

    def _colour(self, operands: list[Any], operator: bytes, state: _State, resources: Any) -> None:
        if operator == b"cs":
            state.space = _space_kind(operands[0] if operands else None, resources)
            state.white = False  # a new colour space starts at its black (or its first colour)
            return
        space = {b"g": "gray", b"rg": "rgb", b"k": "cmyk"}.get(operator, state.space)
        if operator in (b"g", b"rg", b"k"):
            state.space = space
        state.white = space is not None and _numbers(operands) == _WHITE.get(space)

    def _show(self, operands: list[Any], operator: bytes, state: _State, text: _Text) -> None:
        if operator in (b"'", b'"'):
            if operator == b'"' and len(operands) == 3:
                spacing = _numbers(operands[:2])
                if spacing:
                    state.word_spacing, state.char_spacing = spacing
            self._text_state([], b"T*", state, text)
        if not operands:
            return
        pieces = operands[-1] if operator == b"TJ" and isinstance(operands[-1], list) else operands[-1:]
        width = 0.0
        for piece in pieces:
            if isinstance(piece, (int, float)):
                width -= float(piece) / 1000 * state.size * state.scale
            elif isinstance(piece, (str, bytes)):
                raw = piece.get_original_bytes() if hasattr(piece, "get_original_bytes") else piece
                count = len(raw)
                spaces = raw.count(b" " if isinstance(raw, bytes) else " ")
                width += (count * (_GLYPH_WIDTH * state.size + state.char_spacing) + spaces * state.word_spacing) * state.scale
        if width > 0 and not self._shown(text, state, width):
            operands[-1] = [] if operator == b"TJ" else type(operands[-1])(b"" if isinstance(operands[-1], bytes) else "")
            self.blanked += 1
        text.matrix = _times((1.0, 0.0, 0.0, 1.0, width, 0.0), text.matrix)

    def _shown(self, text: _Text, state: _State, width: float) -> bool:
        """Whether a viewer shows the string about to be drawn, `width` wide in text space."""
        size = abs(state.size) or 1.0
        lands = _box(_times(text.matrix, state.ctm), 0, -0.25 * size, width, size)
        if not _overlaps(lands, state.clip):
            return False  # outside the page's box, or clipped away
        if state.mode in (3, 7):
            return self.pictures
        if state.white and state.mode in (0, 4):
            centre = ((lands[0] + lands[2]) / 2, (lands[1] + lands[3]) / 2)
            for area, white in reversed(self.grounds):
                if _holds(area, *centre):
                    return not white
            return False  # white on the blank page
        return True

    def _draw(self, name: str, resources: Any, state: _State, depth: int) -> None:
        """`Do`: a picture is ground painted; a form is walked with its own matrix, box and resources."""
        from pypdf.generic import ContentStream, NameObject

        xobjects = _resolved(resources.get("/XObject")) if resources is not None else None
        target = _resolved(xobjects.get(name)) if xobjects is not None else None
        if target is None:
            return
        subtype = target.get("/Subtype")
        if subtype == "/Image":
            stencil = bool(target.get("/ImageMask"))
            white = state.white if stencil else _white_picture(target)
            self.grounds.append((_meet(_box(state.ctm, 0, 0, 1, 1), state.clip), white))
            return
        if subtype != "/Form" or depth >= MAX_DEPTH or self.forms >= MAX_FORMS:
            return
        self.forms += 1
        inner = replace(state)
        matrix = _numbers(list(target.get("/Matrix", _IDENTITY)))
        if matrix and len(matrix) == 6:
            inner.ctm = _times(tuple(matrix), state.ctm)  # type: ignore[arg-type]
        bbox = _numbers(list(target.get("/BBox", ()))) or []
        if len(bbox) == 4:
            inner.clip = _meet(state.clip, _box(inner.ctm, *bbox))
        content = target if isinstance(target, ContentStream) else ContentStream(target, self.pdf, "bytes")
        own = _resolved(target.get("/Resources")) or resources
        if self.walk(content.operations, own, inner, depth + 1) and content is not target:
            for key, value in target.items():
                if key not in ("/Filter", "/DecodeParms", "/Length"):
                    content[NameObject(key)] = value
            xobjects[NameObject(name)] = content


def _extend(path: list[tuple[float, float]], operands: list[Any], operator: bytes, ctm: Matrix) -> None:
    """Add a path operator's points, in the page's space, to the path being built."""
    values = _numbers(operands)
    if not values:
        return
    if operator == b"re" and len(values) == 4:
        x, y, w, h = values
        box = _box(ctm, x, y, x + w, y + h)
        path.extend([(box[0], box[1]), (box[2], box[3])])
        return
    a, b, c, d, e, f = ctm
    for i in range(0, len(values) - 1, 2):
        x, y = values[i], values[i + 1]
        path.append((a * x + c * y + e, b * x + d * y + f))


def _resolved(value: Any) -> Any:
    return value.get_object() if value is not None and hasattr(value, "get_object") else value


def _space_kind(name: Any, resources: Any) -> str | None:
    """What a colour space named by `cs` holds: gray, RGB or CMYK (the device ones, or an ICC profile of
    1, 3 or 4 components), or None for the rest (Separation, DeviceN, Indexed, Pattern, Lab), whose
    components say nothing about white: tint 1 of a spot colour is full ink."""
    if name is None:
        return None
    if str(name) in _DEVICE_SPACES:
        return _DEVICE_SPACES[str(name)]
    spaces = _resolved(resources.get("/ColorSpace")) if resources is not None else None
    space = _resolved(spaces.get(str(name))) if spaces is not None else None
    if isinstance(space, list) and len(space) == 2 and space[0] == "/ICCBased":
        components = _resolved(space[1]).get("/N")
        return _ICC_SPACES.get(int(components)) if components is not None else None
    if isinstance(space, str) and str(space) in _DEVICE_SPACES:
        return _DEVICE_SPACES[str(space)]
    return None


def _white_picture(image: Any) -> bool:
    """Whether a picture is all white: an unfiltered or Flate-compressed image of 8-bit gray, RGB or CMYK
    samples, with no mask (what shows through one is not the picture's). Others count as not white."""
    if image.get("/Filter") not in (None, "/FlateDecode", ["/FlateDecode"]):
        return False
    if "/SMask" in image or "/Mask" in image or "/Decode" in image or image.get("/BitsPerComponent") != 8:
        return False
    space = _DEVICE_SPACES.get(str(image.get("/ColorSpace")))
    try:
        size = int(image.get("/Width", 0)) * int(image.get("/Height", 0)) * len(_WHITE.get(space or "", "xxxxx"))
    except (TypeError, ValueError):
        return False
    if space is None or not 0 < size <= _PICTURE_CHECK_BYTES:
        return False
    try:
        samples = image.get_data()
    except Exception:  # a damaged picture: a viewer shows something, not a white box
        return False
    return not samples.strip(b"\x00" if space == "cmyk" else b"\xff")


def _draws_picture(operations: list[tuple[Any, bytes]], resources: Any, pdf: Any, seen: set[int]) -> bool:
    """Whether content draws a picture, itself or in a form it draws (a scan's page is often a form
    holding the picture). Each form is looked into once (`seen`)."""
    from pypdf.generic import ContentStream

    xobjects = _resolved(resources.get("/XObject")) if resources is not None else None
    for operands, operator in operations:
        if operator == b"INLINE IMAGE":
            return True
        if operator != b"Do" or not operands or xobjects is None:
            continue
        target = _resolved(xobjects.get(str(operands[0])))
        if target is None:
            continue
        if target.get("/Subtype") == "/Image":
            return True
        if target.get("/Subtype") == "/Form" and id(target) not in seen and len(seen) < MAX_FORMS:
            seen.add(id(target))
            content = target if isinstance(target, ContentStream) else ContentStream(target, pdf, "bytes")
            if _draws_picture(content.operations, _resolved(target.get("/Resources")) or resources, pdf, seen):
                return True
    return False


def page_box(page: Any) -> Box:
    """The part of the page a viewer shows: its crop box (which defaults to its media box)."""
    try:
        box = page.cropbox
        return (float(box.left), float(box.bottom), float(box.right), float(box.top))
    except Exception:  # a page without a usable box: nothing is outside it
        return (-float("inf"), -float("inf"), float("inf"), float("inf"))


def blank_unseen_text(page: Any) -> int:
    """Blank the text on `page` that a viewer does not show (see the module's docstring). The parsed
    content is left on the page, so pypdf's text extraction reads it without parsing it again. Returns how
    many strings were blanked."""
    from pypdf.generic import ContentStream, NameObject

    contents = page.get("/Contents")
    contents = contents.get_object() if contents is not None else None
    if contents is None:
        return 0
    pdf = getattr(page.indirect_reference, "pdf", None)
    content = contents if isinstance(contents, ContentStream) else ContentStream(contents, pdf, "bytes")
    operations = content.operations
    pictures = _draws_picture(operations, _resolved(page.get("/Resources")), pdf, set())
    box = page_box(page)
    sight = PageSight(box, pictures, pdf)
    sight.walk(operations, _resolved(page.get("/Resources")), _State(ctm=_IDENTITY, clip=box))
    page[NameObject("/Contents")] = content
    return sight.blanked
