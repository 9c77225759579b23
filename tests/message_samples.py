"""Chat messages for the message-document tests: a channel's history with distinct facts to ask about."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from raptor_engine.ingest.messages import ChatMessage

AUTHORS = [(100, "alice"), (101, "bob"), (102, "carol"), (103, "dave")]
TOPICS = [
    "the lighthouse lamp needs new wicks before the winter storms",
    "the harbour ferry leaves at seven from the north pier",
    "the bakery on Mill Street sells rye bread on Thursdays",
    "the choir rehearses hymns in the chapel every Tuesday evening",
    "the allotment committee wants compost bins beside the shed",
    "the school library lends telescopes for the meteor shower",
    "the cycling club rides to the reservoir on Sunday mornings",
    "the museum is restoring a steam engine from the old quarry",
]
FACTS = {
    5: "The gate code for the boathouse is 4417, and the key hangs behind the red door.",
    40: "Our treasurer moved the annual dinner to the Crown Inn on the ninth of March.",
}
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def message(
    index: int,
    text: str,
    *,
    channel: int = 400,
    guild: int = 300,
    author: tuple[int, str] | None = None,
    when: datetime | None = None,
    base_id: int = 10_000,
) -> ChatMessage:
    author_id, name = author or AUTHORS[index % len(AUTHORS)]
    moment = when or START + timedelta(minutes=7 * index)
    message_id = base_id + index
    return ChatMessage(
        message_id=message_id,
        channel_id=channel,
        author_id=author_id,
        author=name,
        created_at=moment.isoformat(timespec="seconds").replace("+00:00", "Z"),
        url=f"https://discord.com/channels/{guild}/{channel}/{message_id}",
        text=text,
    )


def history(count: int, **kwargs) -> list[ChatMessage]:
    """`count` messages on rotating topics, with the FACTS at their indices."""
    out = []
    for i in range(count):
        text = FACTS.get(i) or f"Note {i}: {TOPICS[i % len(TOPICS)]}, says message number {i}."
        out.append(message(i, text, **kwargs))
    return out
