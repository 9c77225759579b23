"""`python -m raptor_tools.gateway_bench`: the figures docs/SCALING.md quotes are printed, and sane."""

from __future__ import annotations

import re

from raptor_tools.gateway_bench import identify_seconds, main


def test_identify_time_counts_slots_per_bucket():
    assert identify_seconds(1, 1) == 0.0
    assert identify_seconds(10, 1) == 9 * 5.5  # one bucket: one shard per slot
    assert identify_seconds(16, 16) == 0.0  # sixteen buckets start side by side
    assert identify_seconds(17, 16) == 5.5


def test_bench_prints_cache_and_parse_cost_per_guild(capsys):
    small_guilds = ["--guilds", "40", "--channels", "3", "--roles", "2", "--messages", "50"]
    main([*small_guilds, "--shards", "4", "--max-concurrency", "2"])
    out = capsys.readouterr().out
    small = float(re.search(r"cache per guild: ([\d.]+) KiB", out).group(1))
    main(["--guilds", "40", "--channels", "60", "--roles", "30"])
    big = float(re.search(r"cache per guild: ([\d.]+) KiB", capsys.readouterr().out).group(1))
    assert 0 < small < big  # the cache grows with the guild's channels and roles
    assert re.search(r"GUILD_CREATE parse per guild: \d+ us", out)
    per_message = float(re.search(r"MESSAGE_CREATE parse: (\d+) us", out).group(1))
    share = float(re.search(r"100 messages/s cost ([\d.]+)% of a core", out).group(1))
    assert abs(share - per_message / 100) <= 0.05 + per_message / 1000  # 100/s x us per message
    assert "4 shards, max_concurrency 2: the last shard identifies 5.5 s after the first" in out
