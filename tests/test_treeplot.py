"""Pictures of the tree (issue 11): the layout, the PNG from the engine, and `raptor tree --png` /
`raptor ask --tree-png`, on a one-node, a multi-document and a 20,000-leaf tree."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import raptor_engine.cli as cli_module
from raptor_engine.engine import EmptyKnowledgeBaseError, Engine
from raptor_engine.storage.records import TreeShape
from raptor_engine.tree.treeplot import (
    DPI,
    FIG_SIZE,
    MAX_COLUMNS,
    Columns,
    kind_names,
    plan_picture,
    row_label,
)
from raptor_tools.benchmarks.tree_picture import store_synthetic_tree
from tests.sample_texts import BEEKEEPING, RAILWAY
from tests.unhurried import unhurried_settings

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DISCORD_ATTACHMENT_LIMIT = 8 * 1024 * 1024


def png_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.size


def small_shape() -> TreeShape:
    """Two documents; leaf 3 has two parents (soft clustering); node 9 is the cross-document root."""
    documents = [(10, "b-first.md"), (20, "a-second.md")]
    nodes = [
        (1, 10, 0, "leaf"),
        (2, 10, 0, "leaf"),
        (3, 10, 0, "leaf"),
        (4, 20, 0, "leaf"),
        (5, 20, 0, "leaf"),
        (6, 10, 1, "summary"),
        (7, 10, 1, "summary"),
        (8, 20, 1, "summary"),
        (9, None, 2, "kb"),
    ]
    edges = [(6, 1), (6, 3), (7, 2), (7, 3), (8, 4), (8, 5), (9, 6), (9, 7), (9, 8)]
    return TreeShape(documents, nodes, edges)


def group_of(plan, node_id: int):
    return next(g for g in plan.groups if node_id in g.members)


# ---------------------------------------------------------------------------------------------- layout


def test_layout_keeps_document_order_puts_parents_over_children_and_keeps_every_edge():
    plan = plan_picture(small_shape(), "kb")
    leaves = sorted((g for g in plan.groups if g.layer == 0), key=lambda g: g.x)
    assert [g.members for g in leaves] == [[1], [2], [3], [4], [5]]  # the store's document order
    assert plan.doc_spans[0][1] < plan.doc_spans[1][0]  # a gap between the two documents
    assert group_of(plan, 8).x == pytest.approx((group_of(plan, 4).x + group_of(plan, 5).x) / 2)
    assert [r.kind for r in plan.rows] == ["leaf", "summary", "kb"] and plan.rows[-1].layer == 2
    # soft clustering: leaf 3 under both 6 and 7, and both edges are drawn
    assert (plan.groups.index(group_of(plan, 6)), plan.groups.index(group_of(plan, 3))) in plan.edges
    assert (plan.groups.index(group_of(plan, 7)), plan.groups.index(group_of(plan, 3))) in plan.edges
    assert sum(plan.edges.values()) == len(small_shape().edges)


def test_the_top_layer_is_called_cross_document_only_over_several_documents():
    """As `raptor tree` and /kb tree say in words: over one document the knowledge base's own layer
    combines nothing across documents (the picture called it 'cross-document' anyway)."""
    two = plan_picture(small_shape(), "kb")
    assert row_label(two.rows[-1], len(two.documents)) == "L2 · 1 cross-document"
    one_doc = TreeShape([(10, "only.md")], [(1, 10, 0, "leaf"), (2, 10, 0, "leaf"), (3, None, 1, "kb")], [(3, 1), (3, 2)])
    one = plan_picture(one_doc, "kb")
    assert row_label(one.rows[-1], len(one.documents)) == "L1 · 1 top summary"
    assert kind_names("kb", 1)[0] == "top summary" and kind_names("kb", 2)[0] == "cross-document"
    assert row_label(one.rows[0], 1) == "L0 · 2 leaves"


def test_highlight_marks_exactly_the_given_nodes_and_their_paths_to_the_top():
    plan = plan_picture(small_shape(), "kb", highlight=[3, 8, 12345], cited=[8])
    assert plan.highlighted == [3, 8] and plan.missing == [12345] and plan.cited == {8}
    marked = {m for g in plan.groups if g.highlighted for m in g.members}
    assert marked == {3, 8}
    assert {m for g in plan.groups if g.on_path for m in g.members} == {6, 7, 9}  # 3's parents, the root
    index = {m: i for i, g in enumerate(plan.groups) for m in g.members}
    assert plan.path_edges == {(index[p], index[c]) for p, c in [(6, 3), (7, 3), (9, 6), (9, 7), (9, 8)]}


def test_crowded_rows_are_binned_per_document_with_counts_and_aggregated_edges():
    shape = small_shape()
    plan = plan_picture(shape, "kb", highlight=[1, 2], columns=Columns(most=3, bins=2))
    leaves = [g for g in plan.groups if g.layer == 0]
    assert sorted(g.members for g in leaves) == [[1, 2, 3], [4, 5]]  # one bin per document, in order
    assert sum(plan.edges.values()) == len(shape.edges)  # edges between groups carry their counts
    assert group_of(plan, 1).highlighted == 2 and plan.binned


# ---------------------------------------------------------------------------------------------- engine


def make_engine(tmp_path: Path, embedder) -> Engine:
    return Engine(unhurried_settings(data_dir=tmp_path / "data"), embedder=embedder)


async def test_one_node_tree_gets_a_picture(tmp_path, embedder):
    engine = make_engine(tmp_path, embedder)
    await engine.ingest("one", "note.txt", b"The lighthouse keeper trims the lamp every evening.")
    picture = engine.tree_picture("one")
    assert picture.png.startswith(PNG_SIGNATURE) and picture.nodes == 1 and not picture.binned
    assert png_size(picture.png) == (int(FIG_SIZE[0] * DPI), int(FIG_SIZE[1] * DPI))
    with pytest.raises(EmptyKnowledgeBaseError, match="has no documents yet"):
        engine.tree_picture("nothing-here")
    engine.close()


async def test_multi_document_picture_is_deterministic_and_highlights_exactly_the_context(tmp_path, embedder):
    engine = make_engine(tmp_path, embedder)
    await engine.ingest("kb", "railway.md", RAILWAY.encode())
    await engine.ingest("kb", "bees.md", BEEKEEPING.encode())
    shape = engine.store.tree_shape(engine.store.require_kb("kb"))
    assert [name for _, name in shape.documents] == ["railway.md", "bees.md"]
    assert {kind for *_, kind in shape.nodes} == {"leaf", "summary", "kb"}

    plain = engine.tree_picture("kb")
    assert plain.png == engine.tree_picture("kb").png  # same tree, same bytes
    assert plain.nodes == engine.tree_info("kb").nodes

    answer = await engine.ask("kb", "Who surveyed the railway and how are bees kept?")
    context = [n.node_id for n in answer.context.nodes]
    cited = [c.node_id for c in answer.citations]
    marked = engine.tree_picture("kb", highlight=context, cited=cited, caption=answer.question)
    assert marked.highlighted == context and set(marked.cited) == set(cited) and not marked.missing
    assert marked.png != plain.png and marked.png.startswith(PNG_SIGNATURE)
    plan = plan_picture(shape, "kb", highlight=context, cited=cited)
    assert {m for g in plan.groups if g.highlighted for m in g.members} == set(context)
    assert sum(g.cited for g in plan.groups) == len(set(cited))
    engine.close()


def test_twenty_thousand_leaves_are_binned_and_stay_small(tmp_path):
    settings = store_synthetic_tree(tmp_path / "big", "big", documents=20, leaves=20_000)
    engine = Engine(settings)
    kb_id = engine.store.require_kb("big")
    shape = engine.store.tree_shape(kb_id)
    plan = plan_picture(shape, "big")
    leaf_groups = [g for g in plan.groups if g.layer == 0]
    assert sum(g.size for g in leaf_groups) == 20_000 and plan.binned
    assert all(row.groups <= MAX_COLUMNS for row in plan.rows)
    assert sum(plan.edges.values()) == len(shape.edges)
    doc_of = {node_id: doc_id for node_id, doc_id, _, _ in shape.nodes}
    assert all(len({doc_of[m] for m in g.members}) == 1 for g in leaf_groups)  # bins never cross documents
    first_leaf = shape.nodes[0][0]
    picture = engine.tree_picture("big", highlight=[first_leaf], cited=[first_leaf])
    assert picture.highlighted == [first_leaf] and picture.binned
    assert picture.png.startswith(PNG_SIGNATURE) and picture.nodes == len(shape.nodes)
    assert len(picture.png) < DISCORD_ATTACHMENT_LIMIT
    engine.close()


# ---------------------------------------------------------------------------------------------- CLI


@pytest.fixture
def run(tmp_path, embedder, monkeypatch):
    monkeypatch.setattr(cli_module, "Engine", lambda settings: Engine(settings, embedder=embedder))
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(cli_module.cli, ["--data-dir", str(tmp_path / "data"), *args])

    return invoke


def test_cli_tree_png_and_ask_tree_png(run, tmp_path):
    railway = tmp_path / "railway.md"
    railway.write_text(RAILWAY)
    assert run("ingest", str(railway), "--kb", "t", "--quiet").exit_code == 0

    out = tmp_path / "tree.png"
    result = run("tree", "--kb", "t", "--png", str(out))
    assert result.exit_code == 0, result.output
    assert f"Picture: {out}" in result.output and out.read_bytes().startswith(PNG_SIGNATURE)

    marked = tmp_path / "answer.png"
    asked = run("ask", "Who surveyed the railway?", "--kb", "t", "--json", "--tree-png", str(marked))
    assert asked.exit_code == 0, asked.output
    data = json.loads(asked.output)
    assert data["tree_png"] == str(marked) and marked.read_bytes().startswith(PNG_SIGNATURE)
    assert data["highlighted"] == [n["node_id"] for n in data["context"]["nodes"]]
    assert marked.read_bytes() != out.read_bytes()


def test_cli_picture_errors_are_one_sentence_and_write_nothing(run, tmp_path):
    railway = tmp_path / "railway.md"
    railway.write_text(RAILWAY)
    run("ingest", str(railway), "--kb", "t", "--quiet")
    missing = tmp_path / "no-such-folder" / "tree.png"
    for args in (
        ("tree", "--kb", "t", "--png", str(missing)),
        ("ask", "Who surveyed the railway?", "--kb", "t", "--tree-png", str(missing)),
    ):
        result = run(*args)
        assert result.exit_code != 0
        assert (
            result.output.strip()
            == f"Error: Cannot write {missing}: the folder {missing.parent} does not exist."
        )
    empty = run("tree", "--kb", "empty", "--png", str(tmp_path / "empty.png"))
    assert empty.exit_code != 0 and "has no documents yet" in empty.output
    assert not (tmp_path / "empty.png").exists() and not missing.parent.exists()
    assert [p.name for p in tmp_path.iterdir() if p.suffix in (".png", ".tmp")] == []


def test_a_picture_never_replaces_a_pipe_or_device_and_writes_through_a_link(run, tmp_path):
    """The picture is written beside its path and renamed over it: over a FIFO or a device node (as
    root, `--png /dev/full` replaced the device with a PNG) that destroys the special file, so such a
    path is refused in one sentence; a symlink keeps being a link, its target gets the picture."""
    railway = tmp_path / "railway.md"
    railway.write_text(RAILWAY)
    run("ingest", str(railway), "--kb", "t", "--quiet")
    pipe = tmp_path / "pipe.png"
    os.mkfifo(pipe)
    for args in (("tree", "--kb", "t", "--png", str(pipe)),
                 ("ask", "Who surveyed the railway?", "--kb", "t", "--tree-png", str(pipe))):
        result = run(*args)
        assert result.exit_code == 1
        assert result.output.strip() == (
            f"Error: Cannot write {pipe}: it is not a regular file (a device, pipe or socket); "
            "give the name of a file."
        )
        assert stat.S_ISFIFO(pipe.stat().st_mode)
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    link = tmp_path / "latest.png"
    link.symlink_to(pictures / "tree.png")
    result = run("tree", "--kb", "t", "--png", str(link))
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and (pictures / "tree.png").read_bytes().startswith(PNG_SIGNATURE)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


def _dead_and_live_pids() -> tuple[int, subprocess.Popen]:
    """A pid whose process has exited, and a process that keeps running until the caller stops it."""
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid, subprocess.Popen(["sleep", "60"])


def test_a_picture_killed_before_its_rename_leaves_nothing_after_the_next_one(run, tmp_path):
    """`raptor tree --png` SIGKILLed between writing its `.tree.png.<pid>.tmp` and the rename left that
    file beside the user's picture for good. The next picture to the same path removes the partials of
    processes that no longer run, and leaves a running writer's alone."""
    railway = tmp_path / "railway.md"
    railway.write_text(RAILWAY)
    run("ingest", str(railway), "--kb", "t", "--quiet")
    dead, live = _dead_and_live_pids()
    try:
        killed = tmp_path / f".tree.png.{dead}.tmp"
        killed.write_bytes(PNG_SIGNATURE)  # a picture cut short by the kill
        working = tmp_path / f".tree.png.{live.pid}.tmp"
        working.write_bytes(PNG_SIGNATURE)
        other = tmp_path / f".other.png.{dead}.tmp"  # another path's partial: not this writer's to judge
        other.write_bytes(PNG_SIGNATURE)
        result = run("tree", "--kb", "t", "--png", str(tmp_path / "tree.png"))
        assert result.exit_code == 0, result.output
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == sorted(
            [working.name, other.name]
        )
        asked = run("ask", "Who surveyed the railway?", "--kb", "t", "--tree-png", str(tmp_path / "other.png"))
        assert asked.exit_code == 0, asked.output
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == [working.name]
    finally:
        live.kill()
        live.wait()
