"""Settings of the value-driven memory."""

from __future__ import annotations

import hashlib
from typing import Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field, model_validator

from memory_actor.disk.lease import is_local, local_path

# Settings a newer decision no longer reads, with why: a run recorded before (its summary.json,
# resumed) still loads, and says what was left out.
RETIRED = {
    "memory_prior": "issue 54: an option that shows memory starts at bare's posterior (option_prior_strength)",
}


class MemoryConfig(BaseModel):
    """Where the bank lives, how it embeds, and how retrieval ranks and updates values."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _without_retired(cls, values):
        if isinstance(values, dict) and RETIRED.keys() & values.keys():
            values = dict(values)
            for key in sorted(RETIRED.keys() & values.keys()):
                structlog.get_logger("memory.config").warning("retired_setting_ignored", setting=key,
                                                              why=RETIRED[key], value=values.pop(key))
        return values

    uri: str = Field(".evokernel/memory", description="LanceDB URI: a directory, or s3://... for clusters")
    storage_options: dict[str, str] = Field(
        default_factory=dict, description="object-store options passed to lancedb.connect (region, endpoint, ...)"
    )
    retrieval: Literal["value", "similarity", "none"] = Field(
        "value", description="value: recall then Q-rank; similarity: recall only; none: no memory"
    )
    # mixed by default: on a bank of hundreds of items the recall pool is most of the bank, and a
    # ranking by Q alone then ignores similarity (tests/launch/test_memory_mechanism.py: with `q`
    # the kernel slot of LayerNorm went to a ReLU kernel whose Q was higher than Softmax's).
    ranker: Literal["q", "mixed"] = Field("mixed", description="mixed: MemRL-style score of similarity and Q; "
                                          "q: epsilon-greedy on Q alone")
    items_per_prompt: int = Field(5, ge=1, description="N items per retrieval")
    recall_lambda: float = Field(3.0, ge=1, description="recall pool K = lambda * N")
    lambda_growth: float = Field(
        1.0, ge=0, description="lambda grows by this much per tenfold of bank size above lambda_growth_start items"
    )
    lambda_growth_start: int = Field(1000, ge=1, description="bank size at which lambda starts to grow")
    recall_lambda_max: float = Field(10.0, ge=1, description="upper bound of the grown lambda")
    alpha: float = Field(0.2, gt=0, le=1, description="learning rate of Q updates")
    epsilon: float = Field(0.1, ge=0, le=1, description="exploration rate of the Q ranking")
    # Initial Q per kind and origin. Why not one value: with everything at 0, a new item outranks
    # every item already shown once a few -1 rewards have pulled those below 0 ("newest failure
    # first"). Knowledge someone wrote down is worth more than an unknown item; a kernel that
    # failed is worth less; a working kernel is a good exemplar. Taken when an item is added
    # without values; items keep their own values once they have them.
    q_init: float = Field(0.0, description="initial Q of an api or practice item not seeded (stage draft or refine)")
    q_init_seeded: float = Field(0.3, description="initial Q of seeded knowledge: api and practice items of stage 'seed'")
    q_init_trace_feasible: float = Field(0.2, description="initial Q of a trace that passed all three gates")
    q_init_trace_failed: float = Field(-0.2, description="initial Q of a trace that failed a gate (or has no verdict)")
    q_init_experience: float = Field(0.0, description="initial Q of an experience item (a lesson)")
    baseline: bool = Field(
        True, description="update towards the reward minus the stage's running mean reward, so that uniform rewards "
        "(everything fails) move no item relative to the others")
    baseline_horizon: int = Field(
        100, ge=1, description="the baseline is the mean of about the last this-many rewards of the stage")
    provenance_credit: bool = Field(
        False, description="a feasible attempt with a positive advantage also credits the items that were in the "
        "context when its start point, and the start point's start point, ... were created")
    provenance_gamma_lambda: float = Field(
        0.5, ge=0, le=1, description="provenance: the step at depth d is alpha * (gamma*lambda)^d")
    provenance_max_depth: int = Field(3, ge=0, description="provenance: start points followed back (0: none)")
    slot_prior: tuple[float, float] = Field(
        (1.0, 1.0), description="worked-example slot: Beta prior (successes, failures) of a candidate's success rate")
    slot_pool_strength: float = Field(
        4.0, ge=0, description="worked-example slot: a kernel new to the slot starts from its family's pooled kernel "
        "outcomes, counted as at most this many drafts")
    slot_kernels: int = Field(3, ge=0, description="worked-example slot: banked kernels considered (the nearest, one "
                              "per operator)")
    slot_greedy: bool = Field(
        False, description="the decision beyond the brief takes the memory option of the highest posterior mean only "
        "where it clears `slot_max_loss`, else bare, instead of sampling (Thompson): for a frozen bank's "
        "evaluation, where nothing is learnt from exploring")
    slot_max_loss: float = Field(
        0.02, gt=0, lt=1, description="greedy decision: a memory option displaces bare only where its posterior mean "
        "is above bare's and the pass@1 it costs in expectation, E[max(bare - option, 0)] under the posteriors, is at "
        "most this (a wrongly shown item costs more than a missed one: 2 points, what a user may lose to memory)")
    option_prior_strength: float = Field(
        10.0, gt=0, description="an option that shows memory starts at bare's posterior mean (no lift assumed), "
        "counted as at most this many drafts; its own drafts move it from there")
    cold_rates: dict[str, tuple[int, int]] = Field(
        default_factory=dict, description="the decision beyond the brief: cold records [successes, drafts] of fresh "
        "drafts shown nothing (screening), keyed backend/family (the family's) and backend/family/task (one "
        "operator's); bare's prior on fresh drafts")
    shipped_rates: bool = Field(
        True, description="start from the default model's measured rates shipped in "
        "memory_actor/bundles/measured_rates.yaml (a user's run has no screening): a family's cold record where "
        "`cold_rates` has none, and each memory option's published drafts; off in benchmarks, which measure their own")
    retry_borrow_strength: float = Field(
        4.0, ge=0, description="a retry's option starts from its fresh drafts' record (published and this bank's), "
        "counted as at most this many drafts; the retry's own drafts move it from there (issue 64; 0: retries "
        "learn alone, every untried option ties with bare)")
    cold_prior_strength: float = Field(
        8.0, ge=0, description="a family's cold record counts as at most this many drafts in bare's prior (this "
        "bank's drafts and the operator's own record count in full), and so does a shipped option record")
    cold_drafts: int = Field(
        2, ge=0, description="without any cold record, a family's first fresh drafts shown bare (they measure its "
        "cold rate) before the decision samples")
    w_sim: float = Field(0.5, description="mixed ranker: weight of z(similarity)")
    w_q: float = Field(0.5, description="mixed ranker: weight of clip(z(Q))")
    normalise_refine: bool = Field(True, description="normalise refine rewards by their running mean and std")
    normalise_warmup: int = Field(2, ge=1, description="refine rewards seen before normalising starts")
    normalised_clip: float = Field(3.0, gt=0, description="normalised rewards are clipped to +-this")
    seed: int = Field(0, description="seed of the exploration randomness (reproducible ablations)")
    api_bundle_size: int = Field(6, ge=0, description="core API items of the backend bundle added to each retrieval")
    api_name_lookup_max: int = Field(6, ge=0, description="API items found by exact name in the retrieved code")
    embedder: Literal["minilm", "openai"] = Field("minilm", description="offline MiniLM, or an embeddings endpoint")
    embed_base_url: str | None = Field(None, description="embeddings endpoint for embedder=openai")
    embed_model: str = Field("text-embedding-3-small")
    embed_api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the endpoint's key")
    seed_fresh_bank: bool = Field(True, description="`evokernel run` loads the backend's bundle into a bank "
                                  "that holds no item yet (what `evokernel memory seed BACKEND` does)")
    preload_embedder: bool = Field(True, description="actor: load the embedding model in the background at start")
    embed_batch_size: int = Field(64, ge=1, description="texts per embedding call")
    embed_cache_size: int = Field(20000, ge=0, description="embeddings cached by content hash")
    flush_interval_ms: float = Field(20.0, gt=0, description="actor: group-commit window of the update log")
    write_give_up_s: float = Field(60.0, gt=0, description="actor: a log write that keeps failing (a full disk) is "
                                   "retried this long, one that hangs waited for this long; then the actor stops "
                                   "writing and the campaign stops with its resume command")
    context_flush_ms: float = Field(
        1000.0, gt=0, description="actor: how long retrieval contexts may wait for a write when no caller waits"
    )
    flush_max_rows: int = Field(2048, ge=1, description="actor: flush the update log once this many rows wait")
    fold_every_rows: int = Field(20000, ge=1, description="fold the update log into the items table after this many rows")
    fold_every_flushes: int = Field(500, ge=1, description="... or after this many log flushes (table versions)")
    version_retention_s: float = Field(
        60.0, ge=0, description="compaction keeps table versions younger than this (readers in other processes)"
    )
    history_keep_rows: int = Field(
        100_000, ge=0, description="folded update rows kept in the history table, so that a resume can still take "
        "back the updates of the attempts it redoes after the log was folded (0: keep none)")
    retrieval_log_keep: int = Field(10000, ge=0, description="retrieval contexts kept across a fold for late updates")
    actor_name: str | None = Field(
        None, description="name of the bank's Ray actor; default evokernel-memory-<12 hex digits of the bank's "
        "absolute path or URI>: one actor per bank, so campaigns on other banks share a cluster (memory_actor_name)")
    actor_namespace: str | None = Field(None, description="Ray namespace of the actor; default: the driver's")
    actor_detached: bool = Field(False, description="keep the actor alive after the driver exits")
    actor_max_restarts: int = Field(-1, ge=-1, description="restarts after a crash (-1: unlimited)")
    actor_call_attempts: int = Field(8, ge=1, description="an episode's call to a dead or restarting memory actor is "
                                     "tried this many times (backoff from 0.5 s, doubling up to 10 s) before it fails")
    actor_max_task_retries: int = Field(-1, ge=-1, description="calls retried on a restarted actor (updates are deduplicated)")
    actor_max_concurrency: int = Field(1000, ge=1, description="calls the async actor serves at once")
    recall_batch: int = Field(
        1, ge=1, description="actor: retrievals waiting at once that share one pass over the matrix"
    )
    actor_blas_threads: int = Field(
        1, ge=0, description="BLAS threads for recall in the actor (0: BLAS default); raise on hosts with many cores"
    )
    actor_num_cpus: float = Field(0.0, ge=0, description="CPUs reserved for the actor (0: do not block task slots)")
    # Recall through LanceDB's vector index (memory_actor/recall/, issue 68; docs/memory.md,
    # "A bank of a million items"). The defaults are the measured ones (bench/results/memory-*).
    recall_index_min_items: int = Field(
        150_000, ge=1, description="a bank opened with at least this many items recalls through LanceDB's vector "
        "index (an IVF_SQ index on the `recall` table; item texts and embeddings stay on disk); below it, the exact "
        "in-memory matrix-vector product. Measured: at 100,000 items exact recall costs the actor as much CPU per "
        "retrieval as the index and serves one sooner; at 250,000 it costs 2.5x the CPU, 3-5x the memory and a 6x "
        "longer start (docs/memory.md)")
    recall_index_partitions: int | None = Field(
        None, ge=1, description="IVF partitions of the vector index (default: about sqrt(items), at most 4096)")
    recall_nprobes: int = Field(
        100, ge=1, description="IVF partitions searched first by an indexed recall (of about sqrt(items): 1,000 at 1M). "
        "Measured at 1M: 20 found every neighbour of a query near the bank's operators but 72% of those of an "
        "operator the bank has never seen; 100 found 98% of those, for 1.5 ms more CPU a query")
    recall_max_nprobes: int = Field(
        200, ge=1, description="an indexed recall whose prefilter leaves too few eligible items in the first "
        "partitions searches up to this many")
    recall_refine_factor: int = Field(
        2, ge=1, description="an indexed recall re-ranks this many times the candidates it needs by their exact "
        "vectors (read from disk): scalar quantisation alone loses neighbours inside a tight cluster")
    recall_index_servers: int = Field(
        1, ge=1, description="actor: retrievals served at once on LanceDB's index (each waits on reads as much as it "
        "computes); the exact recall serves one at a time")
    recall_index_batch: int = Field(
        8, ge=1, description="actor: retrievals waiting at once on LanceDB's index that one server takes together (one "
        "index query for their vectors, one read of their items)")
    recall_refresh_rows: int = Field(
        10_000, ge=1, description="items added since the index was last refreshed (searched exactly, their vectors "
        "in memory) before a background refresh adds them to the index")


def memory_actor_name(config: MemoryConfig) -> str:
    """The Ray name of the actor that serves CONFIG's bank: `actor_name` when set, else one
    derived from the bank's absolute path (or its URI), as this process resolves a relative path.
    A campaign fixes the name in the config it hands its episodes (cluster_config)."""
    if config.actor_name:
        return config.actor_name
    bank = local_path(config.uri) if is_local(config.uri) else config.uri.rstrip("/")
    return f"evokernel-memory-{hashlib.sha256(bank.encode()).hexdigest()[:12]}"


def cluster_config(config: MemoryConfig) -> MemoryConfig:
    """CONFIG with the actor's name fixed: episodes on other nodes (another working folder) then
    find the same actor."""
    return config.model_copy(update={"actor_name": memory_actor_name(config)})
