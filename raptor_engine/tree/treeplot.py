"""A picture of a RAPTOR tree: layers as rows, parent-child edges, documents, a legend, and optionally
the nodes an answer drew on (cited ones distinct from merely retrieved ones) with their paths to the top.

The paper shows this only as a hand-made figure (Sarthi et al. 2024, Fig. 4). Two steps:

- `plan_picture` (pure Python and numpy, so tests can check it) places the nodes. Leaves sit in
  document order, each parent over the mean x of its children (soft clustering gives a node several
  parents: every edge is kept). A layer with more nodes than fit across the picture is binned:
  consecutive nodes of one document become a group drawn once with its count, and edges are
  aggregated between groups, so 20,000 leaves stay as readable as 20.
- `render_png` draws a plan with matplotlib's Agg canvas through the object API (never pyplot or a
  GUI backend), at a fixed size and dpi, with PNG metadata that carries no software stamp: the same
  tree gives the same bytes. It is synchronous; async callers run it in a thread.
"""

from __future__ import annotations

import io
import math
import threading
import warnings
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from ..storage.records import TreeShape
from ..types import counted

MAX_COLUMNS = 200  # a row with up to this many nodes draws each one (~8 px apart across the plot)
BIN_COLUMNS = 100  # a more crowded row becomes about this many groups (~17 px: room for a count label)
DOC_GAP = 1.0  # empty columns between two documents' leaves
FIG_SIZE = (16.0, 9.0)  # inches; with DPI 1920 x 1080 pixels, well inside Discord's attachment limit
DPI = 120
AXES_BOX = (0.105, 0.17, 0.885, 0.70)  # left, bottom, width, height in figure fractions
MIN_SPAN = 24.0  # columns shown at least, so a one-node tree is not one giant dot
LAYER_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")
KB_COLOUR = "#d62728"
FADED = "#c9c9c9"
PATH_COLOUR = "#222222"
KIND_NAMES = {"leaf": ("leaf", "leaves"), "summary": ("summary", "summaries"), "kb": ("cross-document",) * 2}

_RENDER_LOCK = threading.Lock()  # matplotlib's font cache and text layout are not documented thread-safe


@dataclass
class Group:
    """One drawn mark: a single node, or consecutive nodes of one document binned together."""

    layer: int
    members: list[int]
    doc: int | None  # index into Plan.documents; None for the cross-document layer
    x: float
    highlighted: int = 0  # members in the answer's context
    cited: int = 0  # members the answer cites
    on_path: bool = False  # holds an ancestor of a highlighted node

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass
class LayerRow:
    layer: int
    kind: str  # "leaf" | "summary" | "kb"
    nodes: int
    groups: int


@dataclass
class Plan:
    """Where everything goes; `render_png` only draws it."""

    kb: str
    documents: list[str]
    doc_spans: dict[int, tuple[float, float]]  # document index -> x extent of its leaves
    groups: list[Group]
    edges: dict[tuple[int, int], int]  # (parent group, child group) -> number of node edges between them
    path_edges: set[tuple[int, int]]  # group pairs on a highlighted node's way to the top
    rows: list[LayerRow]
    width: float  # columns used by the leaf row, gaps included
    highlighted: list[int] = field(default_factory=list)  # requested ids present in the tree, in order
    missing: list[int] = field(default_factory=list)  # requested ids no longer in the tree
    cited: set[int] = field(default_factory=set)

    @property
    def nodes(self) -> int:
        return sum(row.nodes for row in self.rows)

    @property
    def binned(self) -> bool:
        return any(g.size > 1 for g in self.groups)


# ---------------------------------------------------------------------------------------------- layout


@dataclass(frozen=True)
class Columns:
    """How crowded a row may get: up to `most` nodes drawn one by one, else about `bins` groups."""

    most: int = MAX_COLUMNS
    bins: int = BIN_COLUMNS

    def groups_for(self, count: int, total: int) -> int:
        """How many groups a document's `count` nodes get when their row holds `total` nodes."""
        if total <= self.most:
            return count
        return max(1, min(count, round(count * self.bins / total)))


def _by_document(items: list[tuple[int, int | None]]) -> dict[int | None, list[int]]:
    """Node ids per document, documents in first-seen order (the store's document order)."""
    out: dict[int | None, list[int]] = {}
    for node_id, doc in items:
        out.setdefault(doc, []).append(node_id)
    return out


def _leaf_groups(
    leaves: list[tuple[int, int | None]], columns: Columns
) -> tuple[list[Group], dict[int, tuple[float, float]], float]:
    """Leaves left to right in document order, binned when they do not fit; documents a gap apart."""
    groups: list[Group] = []
    spans: dict[int, tuple[float, float]] = {}
    x = 0.0
    for doc, ids in _by_document(leaves).items():
        start = x
        for part in np.array_split(np.array(ids, dtype=np.int64), columns.groups_for(len(ids), len(leaves))):
            groups.append(Group(0, part.tolist(), doc, x))
            x += 1.0
        if doc is not None:
            spans[doc] = (start - 0.5, x - 0.5)
        x += DOC_GAP
    return groups, spans, max(x - DOC_GAP - 1.0, 0.0)


def _spread(groups: list[Group], low: float, high: float) -> None:
    """Keep the groups' order but push them at least a column apart (less when a row is crowded)."""
    if len(groups) < 2:
        return
    groups.sort(key=lambda g: (g.x, g.members[0]))
    gap = min(1.0, (high - low) / (len(groups) - 1))
    xs = [max(groups[0].x, low)]
    for g in groups[1:]:
        xs.append(max(g.x, xs[-1] + gap))
    xs[-1] = min(xs[-1], high)
    for i in range(len(xs) - 2, -1, -1):
        xs[i] = min(xs[i], xs[i + 1] - gap)
    for g, x in zip(groups, xs, strict=True):
        g.x = x


def _upper_groups(
    layer: int,
    items: list[tuple[int, int | None]],
    children: dict[int, list[int]],
    x_of: dict[int, float],
    fallback: dict[int | None, float],
    columns: Columns,
) -> list[Group]:
    """A summary layer: each node over its children's mean x; binned per document when crowded."""
    xs: dict[int, float] = {}
    for node_id, doc in items:
        placed = [x_of[c] for c in children.get(node_id, ()) if c in x_of]
        xs[node_id] = float(np.mean(placed)) if placed else fallback.get(doc, 0.0)
    groups = []
    for doc, ids in _by_document(items).items():
        ordered = sorted(ids, key=lambda i: (xs[i], i))
        for part in np.array_split(
            np.array(ordered, dtype=np.int64), columns.groups_for(len(ids), len(items))
        ):
            members = part.tolist()
            groups.append(Group(layer, members, doc, float(np.mean([xs[m] for m in members]))))
    return groups


def _ancestors(start: set[int], parents: dict[int, list[int]]) -> set[int]:
    seen: set[int] = set()
    todo = list(start)
    while todo:
        for parent in parents.get(todo.pop(), ()):
            if parent not in seen:
                seen.add(parent)
                todo.append(parent)
    return seen


def plan_picture(
    shape: TreeShape,
    kb: str,
    *,
    highlight: Iterable[int] = (),
    cited: Iterable[int] = (),
    columns: Columns = Columns(),
) -> Plan:
    """Place every node of `shape` in groups, aggregate edges, and mark what `highlight` touches."""
    doc_index = {doc_id: i for i, (doc_id, _) in enumerate(shape.documents)}
    layers: dict[int, list[tuple[int, int | None]]] = defaultdict(list)
    kinds: dict[int, str] = {}
    for node_id, doc_id, layer, kind in shape.nodes:
        layers[layer].append((node_id, doc_index.get(doc_id) if doc_id is not None else None))
        kinds[layer] = "kb" if kind == "kb" or kinds.get(layer) == "kb" else kind
    known = {n[0] for n in shape.nodes}
    edges = [(p, c) for p, c in shape.edges if p in known and c in known]
    children: dict[int, list[int]] = defaultdict(list)
    parents: dict[int, list[int]] = defaultdict(list)
    for p, c in edges:
        children[p].append(c)
        parents[c].append(p)

    groups, spans, width = _leaf_groups(layers.get(0, []), columns)
    fallback: dict[int | None, float] = {d: (a + b) / 2 for d, (a, b) in spans.items()}
    fallback[None] = width / 2
    x_of = {m: g.x for g in groups for m in g.members}
    rows = [LayerRow(0, kinds.get(0, "leaf"), len(layers.get(0, [])), len(groups))] if 0 in layers else []
    slots = int(width) + 1  # upper rows get no more room than the leaf row: crowded ones are binned too
    upper = Columns(most=min(columns.most, slots), bins=min(columns.bins, slots))
    for layer in sorted(k for k in layers if k > 0):
        row = _upper_groups(layer, layers[layer], children, x_of, fallback, upper)
        _spread(row, 0.0, max(width, float(len(row) - 1)))
        x_of.update({m: g.x for g in row for m in g.members})
        groups += row
        rows.append(LayerRow(layer, kinds[layer], len(layers[layer]), len(row)))
    width = max([width] + [g.x for g in groups])

    group_of = {m: i for i, g in enumerate(groups) for m in g.members}
    aggregated: dict[tuple[int, int], int] = defaultdict(int)
    for p, c in edges:
        aggregated[(group_of[p], group_of[c])] += 1

    wanted = list(dict.fromkeys(int(i) for i in highlight))
    cited_ids = {int(i) for i in cited} & known
    present = [i for i in wanted if i in known] + sorted(cited_ids - set(wanted))
    marked = set(present)
    above = _ancestors(marked, parents)
    on_path = marked | above
    path_edges = {(group_of[p], group_of[c]) for p, c in edges if c in on_path}
    for g in groups:
        g.highlighted = sum(1 for m in g.members if m in marked)
        g.cited = sum(1 for m in g.members if m in cited_ids)
        g.on_path = any(m in above for m in g.members)
    return Plan(
        kb=kb,
        documents=[name for _, name in shape.documents],
        doc_spans=spans,
        groups=groups,
        edges=dict(aggregated),
        path_edges=path_edges,
        rows=rows,
        width=width,
        highlighted=present,
        missing=[i for i in wanted if i not in known],
        cited=cited_ids,
    )


# ---------------------------------------------------------------------------------------------- drawing


def layer_colour(layer: int, kind: str) -> str:
    return KB_COLOUR if kind == "kb" else LAYER_COLOURS[layer % len(LAYER_COLOURS)]


def kind_names(kind: str, documents: int) -> tuple[str, ...]:
    """What a row's nodes are (singular, plural). The knowledge base's own layer combines nothing across
    documents while there is one: it is then the top summary, as `raptor tree` says in words."""
    if kind == "kb" and documents == 1:
        return ("top summary", "top summaries")
    return KIND_NAMES.get(kind, ("node",))


def row_label(row: LayerRow, documents: int) -> str:
    """A row's label at the left: its layer and how many nodes of which kind."""
    label = f"L{row.layer} · {counted(row.nodes, *kind_names(row.kind, documents))}"
    if row.groups < row.nodes:
        label += f"\nin {row.groups:,} groups"
    return label


def _title(plan: Plan) -> str:
    return (
        f"RAPTOR tree of {plan.kb}: {counted(len(plan.documents), 'document')}, "
        f"{counted(plan.nodes, 'node')}, {counted(len(plan.rows), 'layer')}"
    )


def _highlight_line(plan: Plan, caption: str) -> str:
    if not plan.highlighted and not plan.missing:
        return caption
    line = (
        f"Highlighted: the answer's {counted(len(plan.highlighted), 'context node')} ({len(plan.cited)} cited)"
    )
    if plan.missing:
        line += f"; {len(plan.missing)} more no longer in the tree"
    return f"{line} — {caption}" if caption else line


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Canvas:
    """One figure being drawn; sizes derive from how many pixels a column gets."""

    def __init__(self, plan: Plan):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.plan = plan
        self.fig = Figure(figsize=FIG_SIZE, dpi=DPI)
        FigureCanvasAgg(self.fig)
        self.ax = self.fig.add_axes(AXES_BOX)
        self.kinds = {row.layer: row.kind for row in plan.rows}
        self.top = max(self.kinds) if self.kinds else 0
        span = max(plan.width + 1.0, MIN_SPAN)
        middle = plan.width / 2
        self.ax.set_xlim(middle - span / 2, middle + span / 2)
        self.ax.set_ylim(-0.75, self.top + 0.55)
        self.ax.set_axis_off()
        column_px = FIG_SIZE[0] * DPI * AXES_BOX[2] / span
        self.column_pt = column_px * 72 / DPI
        self.highlighting = bool(plan.highlighted)

    @property
    def marker_pt(self) -> float:
        return min(max(0.75 * self.column_pt, 2.5), 9.0)

    @property
    def label_pt(self) -> float:
        return min(max(0.8 * self.column_pt, 3.5), 7.0)

    def text(self, *args, **kwargs) -> None:
        self.ax.text(*args, parse_math=False, **kwargs)  # names and questions may contain '$'

    def label(self, x: float, y: float, text: str, offset_pt: float, **kwargs) -> None:
        """Text `offset_pt` points above (positive) or below (negative) a mark, clear of its marker."""
        kwargs.setdefault("fontsize", self.label_pt)
        self.ax.annotate(
            text,
            (x, y),
            xytext=(0, offset_pt),
            textcoords="offset points",
            ha="center",
            va="bottom" if offset_pt > 0 else "top",
            annotation_clip=False,
            parse_math=False,
            zorder=6,
            **kwargs,
        )

    def documents(self) -> None:
        """Alternating bands and names mark where each document's nodes are."""
        from matplotlib.collections import PolyCollection
        from matplotlib.transforms import blended_transform_factory

        doc_top = self.top - 0.5 if self.kinds.get(self.top) == "kb" else self.top + 0.5
        bands = [
            [(a, -0.6), (b, -0.6), (b, doc_top), (a, doc_top)]
            for i, (a, b) in sorted(self.plan.doc_spans.items())
            if i % 2 == 0
        ]
        self.ax.add_collection(PolyCollection(bands, facecolors="#f1f3f6", edgecolors="none", zorder=0))
        under = blended_transform_factory(self.ax.transData, self.ax.transAxes)
        px_per_col = FIG_SIZE[0] * DPI * AXES_BOX[2] / (self.ax.get_xlim()[1] - self.ax.get_xlim()[0])
        spans = sorted(self.plan.doc_spans.items())
        rooms = [(b - a) * px_per_col / (0.6 * 7 * DPI / 72) for _, (a, b) in spans]  # 7 pt characters
        across = all(
            room >= min(len(self.plan.documents[i]), 12) for room, (i, _) in zip(rooms, spans, strict=True)
        )
        style = {"fontsize": 7} if across else {"rotation": 90, "fontsize": min(self.label_pt + 0.5, 6.5)}
        for room, (i, (a, b)) in zip(rooms, spans, strict=True):
            name = _shorten(self.plan.documents[i], int(room) if across else 24)
            self.text(
                (a + b) / 2, -0.01, name, transform=under, ha="center", va="top", color="#333333", **style
            )

    def rows(self) -> None:
        from matplotlib.transforms import blended_transform_factory

        left = blended_transform_factory(self.ax.transAxes, self.ax.transData)
        for row in self.plan.rows:
            self.text(
                -0.008,
                row.layer,
                row_label(row, len(self.plan.documents)),
                transform=left,
                ha="right",
                va="center",
                fontsize=8,
                color=layer_colour(row.layer, row.kind),
                fontweight="bold",
            )

    def edges(self) -> None:
        from matplotlib.collections import LineCollection

        groups = self.plan.groups
        keys = sorted(self.plan.edges)
        segments = [[(groups[c].x, groups[c].layer), (groups[p].x, groups[p].layer)] for p, c in keys]
        widths = [0.35 + 0.35 * math.log1p(self.plan.edges[k]) for k in keys]
        alpha = 0.18 if self.highlighting else 0.4
        self.ax.add_collection(
            LineCollection(segments, linewidths=widths, colors="#7f8c9a", alpha=alpha, zorder=1)
        )
        path = sorted(self.plan.path_edges)
        if path:
            segments = [[(groups[c].x, groups[c].layer), (groups[p].x, groups[p].layer)] for p, c in path]
            self.ax.add_collection(
                LineCollection(segments, linewidths=1.4, colors=PATH_COLOUR, alpha=0.85, zorder=3)
            )

    def _colour(self, g: Group) -> str:
        colour = layer_colour(g.layer, self.kinds[g.layer])
        return colour if not self.highlighting or g.highlighted or g.on_path else FADED

    def nodes(self) -> None:
        size = self.marker_pt**2
        for shape, pick in (("o", lambda g: g.size == 1), ("s", lambda g: g.size > 1)):
            chosen = [g for g in self.plan.groups if pick(g) and not g.highlighted]
            if chosen:
                self.ax.scatter(
                    [g.x for g in chosen],
                    [g.layer for g in chosen],
                    s=size,
                    marker=shape,
                    c=[self._colour(g) for g in chosen],
                    linewidths=0,
                    zorder=2,
                )
        for g in self.plan.groups:
            if g.size > 1 and not g.highlighted:
                self.label(g.x, g.layer, str(g.size), -(self.marker_pt / 2 + 1), rotation=90, color="#555555")

    def highlights(self) -> None:
        big = max(self.marker_pt * 1.9, 7.0)
        for g in self.plan.groups:
            if not g.highlighted:
                continue
            colour = layer_colour(g.layer, self.kinds[g.layer])
            marker, scale = ("*", 1.6) if g.cited else ("s" if g.size > 1 else "o", 1.0)
            self.ax.scatter(
                [g.x],
                [g.layer],
                s=(big * scale) ** 2,
                marker=marker,
                c=[colour],
                edgecolors="black",
                linewidths=0.9,
                zorder=5,
            )
            reach = big * scale / 2 + 1
            if g.size == 1:
                self.label(g.x, g.layer, str(g.members[0]), reach, fontsize=6.5, color="#111111")
            else:
                self.label(
                    g.x,
                    g.layer,
                    f"{g.highlighted}/{g.size}",
                    -reach,
                    rotation=90,
                    color="#111111",
                    fontweight="bold",
                )

    def legend(self, caption: str) -> None:
        from matplotlib.lines import Line2D

        def mark(marker: str, colour: str, label: str, size: float = 7, edge: str = "none") -> Line2D:
            return Line2D(
                [],
                [],
                marker=marker,
                linestyle="",
                color=colour,
                markeredgecolor=edge,
                markersize=size,
                label=label,
            )

        def line(colour: str, width: float, label: str) -> Line2D:
            return Line2D([], [], color=colour, linewidth=width, label=label)

        handles = [
            mark("o", layer_colour(r.layer, r.kind), f"L{r.layer} {kind_names(r.kind, len(self.plan.documents))[0]}")
            for r in self.plan.rows
        ]
        if self.plan.binned:
            handles.append(mark("s", "#777777", "group of n nodes (n below)"))
        if self.plan.edges:
            handles.append(line("#7f8c9a", 1.2, "parent-child edges"))
        if self.highlighting:
            handles += [
                mark("o", "#999999", "retrieved (node id above; k/n in a group)", 8, "black"),
                mark("*", "#999999", "cited [n]", 12, "black"),
            ]
            if self.plan.path_edges:
                handles.append(line(PATH_COLOUR, 1.6, "path to the top"))
        self.fig.text(
            0.01, 0.975, _title(self.plan), fontsize=13, fontweight="bold", va="top", parse_math=False
        )
        subtitle = _highlight_line(self.plan, caption)
        if subtitle:
            self.fig.text(
                0.01, 0.945, _shorten(subtitle, 190), fontsize=9, va="top", color="#333333", parse_math=False
            )
        self.fig.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(0.008, 0.925),
            ncol=len(handles),
            fontsize=8,
            frameon=False,
            handletextpad=0.3,
            columnspacing=1.2,
        )

    def png(self) -> bytes:
        out = io.BytesIO()
        self.fig.savefig(out, format="png", dpi=DPI, metadata={"Software": None})
        return out.getvalue()


def render_png(plan: Plan, caption: str = "") -> bytes:
    """The plan drawn as PNG bytes: same plan, same bytes. Synchronous (about a second for 20k leaves)."""
    with _RENDER_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glyphs a font lacks (e.g. CJK names) draw as boxes; not an error
        canvas = _Canvas(plan)
        canvas.documents()
        canvas.rows()
        canvas.edges()
        canvas.nodes()
        canvas.highlights()
        canvas.legend(caption)
        return canvas.png()
