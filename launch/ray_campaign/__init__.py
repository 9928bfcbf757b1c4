"""The campaign over Ray: every operator of a suite as a Ray task, over device-pinned pools.

- `concurrent_campaign`: `ConcurrentCampaign`, the driver's loop over the operators (bounded,
  streamed, resumable) and how each episode ended;
- `campaign_actors`: the memory actor, run recorder and LLM workers it starts, and their flush
  and teardown at the end;
- `campaign_services`: what an episode task runs on (`run_episode`, its ports);
- `roles`: which class runs where, one table; `run_recorder`: the single writer of
  attempts.jsonl and the live counters; `ray_session`: joining or starting Ray;
- `campaign_progress`: the status line, its notes, and Ctrl-C as a stop request;
  `lost_operators`: operators lost with their node, run again once.

May import: actors, memory_actor, npu_pool, and launch's modules below it (`campaign`, `config`,
`run_summary`, `metrics`, `kernel_files`, `logging`, `dashboards`). Never imports
`launch.commands` or `launch.cli` (they sit above it). This package imports nothing itself:
import from the module.
"""
