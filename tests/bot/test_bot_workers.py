"""The bot's uploads built on Dask workers, through the real upload flow against the fake Discord.

One embedded LocalCluster started by the bot itself (the default of `python -m bot`), and one shared
single-worker cluster for the module that the bot reaches as an existing scheduler (RAPTOR_DASK_SCHEDULER).
"""

from __future__ import annotations

import dataclasses

import pytest

from bot.kb import kb_name
from bot.uploads import Source, UploadLog
from tests.bot.bot_samples import LIGHTHOUSE, SOURDOUGH
from tests.bot.conftest import ALICE, BOB, CAROL, CHAN_A, GUILD, text_of
from tests.dask_processes import finished_builds

KB_A = kb_name(GUILD, CHAN_A)


def recorded_as_running(settings, filename: str, data: bytes) -> int:
    """What a bot killed mid-build leaves behind: the upload recorded as running with its bytes."""
    log = UploadLog(settings.data_dir / "uploads.db")
    try:
        source = Source(filename, "http://cdn.invalid/gone", len(data))  # never fetched: the bytes are kept
        [upload_id] = log.accept(KB_A, [source], "alice", CHAN_A, ALICE)
        log.downloaded(upload_id, data)
        log.mark(upload_id, "running")
    finally:
        log.close()
    return upload_id


@pytest.fixture(scope="module")
def scheduler_address():
    """One process worker for the module's tests (started once: a worker loads the model); it declares the
    project's version, as `raptor worker` does, so builds run on it."""
    from distributed import LocalCluster

    from raptor_engine.workers import close_local_cluster, version_resource

    cluster = LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None, resources={version_resource(): 1}
    )
    try:
        yield cluster.scheduler_address
    finally:  # as the bot closes its own: a worker slow to stop under load must not fail the teardown
        cluster.sync(close_local_cluster, cluster)


async def test_default_bot_builds_on_its_embedded_cluster(
    make_harness, bot_settings
):
    settings = dataclasses.replace(bot_settings, build_workers=1)
    h = await make_harness(settings=settings)
    assert h.engine.cluster is not None and h.engine.cluster.local is not None  # the bot started it
    attachment = h.fake.add_file("kestrel.md", LIGHTHOUSE.encode())
    token = h.kb_add(attachment)
    replies = await h.replies_done(token, lambda r: "Done" in text_of(r[0]), what="the build")
    assert "✅ **kestrel.md** added:" in replies[0]["content"]
    assert [d.name for d in h.engine.documents(KB_A)] == ["kestrel.md"]
    uploads = h.bot.services.jobs.uploads
    assert uploads.unfinished() == []
    assert uploads.status(1) == "done"
    await h.bot.close()
    assert h.engine.cluster.client is None and h.engine.cluster.local is None  # closed with the bot


async def test_synced_messages_their_edit_and_their_deletion_are_built_on_the_bots_cluster(make_harness, bot_settings):
    """Message documents are built where files are: on the bot's embedded cluster, not in its threads."""
    settings = dataclasses.replace(bot_settings, build_workers=1)
    h = await make_harness(settings=settings, message_content=True)
    cluster = h.engine.cluster
    assert cluster is not None and cluster.local is not None

    def held(message: dict) -> bool:
        return int(message["id"]) in h.engine.message_ids(KB_A)

    def stored_text() -> str:
        with h.engine.in_space(KB_A):
            return " ".join(n.text for n in h.engine.store.nodes_of_kb(h.engine.store.kb_id(KB_A)))

    token = h.slash("kb", [{"name": "enabled", "type": 5, "value": True}], sub="sync")
    assert "Sync is now **on**" in (await h.replies_done(token))[0]["content"]
    gate = h.say(CHAN_A, "The gate code for the boathouse is 4417.", user=BOB)
    ferry = h.say(CHAN_A, "The ferry timetable changes in April.", user=CAROL)
    await h.fake.wait_for(lambda: held(gate) and held(ferry), timeout=240, what="synced messages")
    h.edit(ferry, "The ferry timetable changes in May, not April.")
    await h.fake.wait_for(lambda: "changes in May" in stored_text(), timeout=240, what="the edit")
    h.delete(gate)
    await h.fake.wait_for(lambda: not held(gate), timeout=240, what="the deletion")
    await h.bot.services.sync.settled()
    assert "4417" not in stored_text() and "changes in April." not in stored_text()
    builds = await cluster.client.run_on_scheduler(finished_builds)
    assert sum("raptor-build-messages-" in key for key in builds) >= 3  # additions, the edit, the deletion


async def test_restarted_bot_builds_an_unfinished_upload_again_and_tells_its_requester(
    make_harness, bot_settings, scheduler_address
):
    settings = dataclasses.replace(bot_settings, dask_scheduler=scheduler_address)
    upload_id = recorded_as_running(settings, "bread.txt", SOURDOUGH.encode())
    h = await make_harness(settings=settings)

    def final_message():
        return next(
            (m for m in h.fake.channel_messages(CHAN_A) if "Done" in m["content"] and "bread.txt" in m["content"]),
            None,
        )

    message = await h.fake.wait_for(final_message, timeout=240, what="the resumed build")
    assert message["content"].startswith(f"<@{ALICE}> Done (the bot restarted while this file was being added")
    shown = h.fake.versions[int(message["id"])]
    assert shown[0].startswith(f"<@{ALICE}> The bot restarted while this file was being added; adding it again")
    assert "✅ **bread.txt** added" in message["content"]
    assert [d.name for d in h.engine.documents(KB_A)] == ["bread.txt"]
    assert h.bot.services.jobs.uploads.status(upload_id) == "done"


async def test_a_resumed_upload_that_had_been_committed_is_not_added_twice(
    make_harness, bot_settings, scheduler_address
):
    settings = dataclasses.replace(bot_settings, dask_scheduler=scheduler_address)
    h = await make_harness(settings=settings)
    await h.engine.ingest(KB_A, "bread.txt", SOURDOUGH.encode(), added_by="alice")
    await h.bot.close()
    # The bot died after the commit but before marking the upload done.
    recorded_as_running(settings, "bread.txt", SOURDOUGH.encode())
    h2 = await make_harness(settings=settings)
    await h2.fake.wait_for(
        lambda: any("already in this knowledge base" in m["content"] for m in h2.fake.channel_messages(CHAN_A)),
        timeout=240,
        what="the resumed upload's outcome",
    )
    assert [d.name for d in h2.engine.documents(KB_A)] == ["bread.txt"]
    assert h2.bot.services.jobs.uploads.unfinished() == []
