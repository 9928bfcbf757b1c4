"""Backend bundles (memory_actor/bundles/<backend>.yaml): API knowledge, best practices and, per
operator family, the idiomatic worked example (`example_<family>`) for one example task
(bundles/examples.yaml); plus the ladder's rungs (memory_actor/ladder: a first rung for every
family and signature shape, as source files). Items get stable ids, so seeding twice keeps the
values already learned."""

from __future__ import annotations

import hashlib
import os
import re
from importlib import resources

import yaml

from memory_actor.config import MemoryConfig
from memory_actor.items import MemoryItem
from memory_actor.ladder import example_tasks  # noqa: F401 (its readers import it from here too)

BUNDLE_BACKENDS = ("cpu", "cuda", "npu", "npu-twin")
# Backends that share another's bundle: the Ascend C twin builds the npu kernel format.
BUNDLE_FILES = {"npu-twin": "npu"}
# npu items that cannot apply on the twin: it builds only the kernel format (no torch_npu, no
# NPU events), and the format passes sizes in KernelTiling (no framework tiling macro).
TWIN_SKIPPED_ITEMS = ("torch_npu", "torch.npu.Event", "GET_TILING_DATA")


def _twin_supports(entry: dict) -> bool:
    """Whether an npu bundle item applies to the twin: not a skipped item, and naming no API the
    twin refuses (twin_unsupported.h, e.g. the cube's low-level Mmad)."""
    from npu_pool.backends.ascendc_twin.build import unsupported_apis

    if entry.get("name") in TWIN_SKIPPED_ITEMS or entry.get("name") in unsupported_apis():
        return False
    calls = set(re.findall(r"\b(\w+)\s*(?:<[^;()]*>)?\s*\(", entry["content"]))
    return not calls & unsupported_apis()


def bundle_items(backend: str) -> list[MemoryItem]:
    """The bundle's items for `backend`; ids derive from backend, kind and name or summary."""
    if backend not in BUNDLE_BACKENDS:
        raise ValueError(f"no bundle for backend {backend!r}; bundles: {', '.join(BUNDLE_BACKENDS)}")
    text = resources.files("memory_actor").joinpath("bundles", f"{BUNDLE_FILES.get(backend, backend)}.yaml").read_text()
    bundle = yaml.safe_load(text)
    items = []
    for entry in bundle["items"]:
        if backend == "npu-twin" and not _twin_supports(entry):
            continue
        key = f"{backend}/{entry['kind']}/{entry.get('name') or entry['summary']}"
        example = entry.get("task")  # a family's rung or worked example: its task and that task's signature
        tags = ["bundle"] + (["core"] if entry.get("core") else [])
        if example:  # an option of the draft decision (slots.py): `example`, or the one the entry declares
            tags += ["example", f"family:{example_tasks()[example][0]}", f"option:{example_option(entry)}"]
        items.append(MemoryItem(
            id="bundle-" + hashlib.sha1(key.encode()).hexdigest()[:16],
            kind=entry["kind"], backend=backend, stage="seed", name=entry.get("name"), tags=tags,
            task_id=example, task_signature=entry.get("signature", ""),
            summary=entry["summary"], content=entry["content"].strip(),
        ))
    return items + ladder_items(backend)


def ladder_items(backend: str) -> list[MemoryItem]:
    """The ladder's rungs for `backend` (memory_actor/ladder), as bundle items: the first rungs are
    the draft decision's option `rung`; the speed rungs (`ub_scalar`, `vector`, `double_buffer`, issue 65) are
    options of the refine decision only (tagged `decision:refine`, their option their rung's word),
    never a draft's. Per family, the family example's task first."""
    from memory_actor import ladder

    language = ladder.LANGUAGES.get(backend)
    if language is None:
        return []
    signatures = ladder.signatures().get(language, {})
    items = []
    for rung in ladder.rungs(language):
        family = ladder.task_source(rung.task_id)[0]
        name = ladder.item_name(family, rung.task_id, rung.rung)
        key = f"{backend}/api/{name}"
        tags = ["bundle", "example", f"family:{family}", "option:rung", f"rung:{rung.rung}"]
        if rung.rung != "first":  # a speed rung: the refine decision's (memory_actor/slots.py, REFINE_TAG)
            tags = ["bundle", "example", f"family:{family}", f"option:{rung.rung}", f"rung:{rung.rung}", "decision:refine"]
        items.append(MemoryItem(
            id="bundle-" + hashlib.sha1(key.encode()).hexdigest()[:16], kind="api", backend=backend, stage="seed",
            name=name, tags=tags, task_id=rung.task_id, task_signature=signatures.get(rung.task_id, ""),
            summary=rung.summary, content=rung.content.strip()))
    return items


def example_option(entry: dict) -> str:
    """The decision's option an example entry of a bundle belongs to: its `option` field (a rung
    of the family's ladder, say), else `example`. A word: it becomes a statistic key."""
    option = entry.get("option", "example")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", option) or option in ("bare", "generic", "kernels", "all"):
        raise ValueError(f"bundle item {entry.get('name')!r}: option {option!r} is not a new lower-case word")
    return option


def seed_items(backend: str, known_ids: set[str], refresh: bool = False) -> list[MemoryItem]:
    """Bundle items to add: those the bank lacks, or all of them with `refresh` (resets values)."""
    return [item for item in bundle_items(backend) if refresh or item.id not in known_ids]


def seed_fresh_bank(config: MemoryConfig, backend: str, owner: str | None = None) -> int:
    """Load `backend`'s bundle into the bank at `config.uri` when it holds no item yet, so that a
    first run has API knowledge, practices and its families' worked examples to show; the items
    added (0: a bank in use, a run without retrieval, `seed_fresh_bank` off, or a backend
    without a bundle).

    Idempotent: the bank is opened as its one writer (memory_actor.disk.lease; BankInUse when another
    process writes it), so two runs starting at once seed it once, and only ids it lacks are added."""
    if not config.seed_fresh_bank or config.retrieval == "none" or backend not in BUNDLE_BACKENDS:
        return 0
    from memory_actor.bank import MemoryBank  # the bank imports the embedder: only when needed
    from memory_actor.disk.lease import is_local, local_path
    from memory_actor.disk.store import BankStore

    config = config.model_copy(update={"preload_embedder": False})
    if ((not is_local(config.uri) or os.path.isdir(local_path(config.uri)))
            and BankStore(config.uri, config.storage_options, read_only=True).exists()
            and MemoryBank(config, read_only=True).items):
        return 0  # a bank in use: looked at without the lock, and nothing written
    bank = MemoryBank(config, owner=owner)
    try:
        if bank.items:
            return 0
        items = seed_items(backend, set(bank.items))
        bank.add(items)
        return len(items)
    finally:
        bank.close()


def example_items(backend: str, option: str = "example") -> dict[str, MemoryItem]:
    """The family worked examples of `backend`'s bundle that belong to `option` (the verified
    idiomatic example by default; another word for the examples a bundle declares under it),
    by family: the first of each family where there are several (rungs: family_rungs)."""
    found: dict[str, MemoryItem] = {}
    for item in bundle_items(backend):
        if "example" in item.tags and item.tag_values().get("option") == option:
            found.setdefault(item.tag_values()["family"], item)
    return found


def rung_items(backend: str) -> dict[str, MemoryItem]:
    """Each family's first rung for its example task (`rung_<family>`, issue 54), by family."""
    return {family: items[0] for family, items in family_rungs(backend).items()}


def family_rungs(backend: str) -> dict[str, list[MemoryItem]]:
    """Every first rung of `backend`'s bundle by family (one per signature shape, issue 64): the
    family example's task first."""
    found: dict[str, list[MemoryItem]] = {}
    for item in bundle_items(backend):
        if "example" in item.tags and item.tag_values().get("option") == "rung":
            found.setdefault(item.tag_values()["family"], []).append(item)
    return found


def speed_rungs(backend: str) -> dict[str, list[MemoryItem]]:
    """Every speed rung of `backend`'s bundle (issue 65: `ub_scalar`, `vector`, `double_buffer`; the refine
    decision's options, never a draft's) by family, in ladder order."""
    found: dict[str, list[MemoryItem]] = {}
    for item in bundle_items(backend):
        if "decision:refine" in item.tags:
            found.setdefault(item.tag_values()["family"], []).append(item)
    return found
