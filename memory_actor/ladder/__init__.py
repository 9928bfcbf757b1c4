"""The ladder: verified kernels, from the simplest correct one up, as real source files.

A small model finishes what is shaped like what it is shown, in the task's own names (v4, v5):
so for each operator family and signature shape the suites hold there is a rung, written for an
operator outside every benchmark pool (issues 54, 64, 65). The folder holds:

- `tasks/<task_id>.py`: the rungs' own tasks, KernelBench files (first line `# family: <name>`),
  beside the family worked examples' tasks (bundles/examples.yaml), which carry rungs too;
- `c/<task_id>.<rung>.cpp` (the cpu backend's C kernel format) and `ascendc/<task_id>.<rung>.cpp`
  (npu and npu-twin): one kernel each, starting with a header of `// key: value` lines (`rung`,
  `task`, `summary`), which is not shown; the rest is the kernel as the prompt shows it;
- `signatures.yaml`: each task's kernel signature as each language renders it (what renaming
  reads), written by `python -m memory_actor.ladder --write-signatures` and checked by the tests.

Rungs, lowest first: `first` (C: plain loops; Ascend C: scalar `GlobalTensor` loops split over
blocks), then the speed rungs of the climb. A first rung is the draft decision's `rung` option
(memory_actor/slots.py) for every task whose signature it maps onto (actors/briefing.py).
tests/memory_actor/test_ladder.py runs every file through its backend's real gates on its task.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

RUNGS = ("first", "ub_scalar", "vector", "double_buffer")  # the climb, lowest first
LANGUAGES = {"cpu": "c", "npu": "ascendc", "npu-twin": "ascendc"}  # backend -> the folder of its kernels
_HEADER = re.compile(r"^//\s*(\w+):\s*(.*)$")


@dataclass(frozen=True)
class Rung:
    """One kernel of the ladder."""

    language: str  # c, ascendc
    task_id: str
    rung: str  # one of RUNGS
    summary: str
    content: str  # the kernel, without its header
    path: str


def folder() -> Path:
    return Path(str(resources.files("memory_actor").joinpath("ladder")))


@cache
def ladder_tasks() -> dict[str, tuple[str, str]]:
    """The ladder's own tasks: task id -> (family, reference source)."""
    found = {}
    for path in sorted((folder() / "tasks").glob("*.py")):
        source = path.read_text()
        first = source.splitlines()[0] if source else ""
        matched = re.fullmatch(r"#\s*family:\s*(\w+)\s*", first)
        if matched is None:
            raise ValueError(f"{path}: the first line must be `# family: <name>`")
        found[path.stem] = (matched.group(1), source)
    return found


@cache
def example_tasks() -> dict[str, tuple[str, str]]:
    """The family worked examples' tasks (bundles/examples.yaml): task id -> (family, reference
    source). They carry the families' first rungs too."""
    text = resources.files("memory_actor").joinpath("bundles", "examples.yaml").read_text()
    return {entry["task"]: (entry["family"], entry["source"]) for entry in yaml.safe_load(text)["tasks"]}


def task_source(task_id: str) -> tuple[str, str]:
    """(family, reference source) of a rung's task: the ladder's own, or a family example's."""
    tasks = {**example_tasks(), **ladder_tasks()}
    if task_id not in tasks:
        raise KeyError(f"no ladder or example task {task_id!r}")
    return tasks[task_id]


def parse_rung(path: Path, language: str) -> Rung:
    header: dict[str, str] = {}
    lines = path.read_text().splitlines()
    body_start = 0
    for i, line in enumerate(lines):
        matched = _HEADER.match(line)
        if matched is None:
            body_start = i
            break
        header[matched.group(1)] = matched.group(2).strip()
    stem_task, _, stem_rung = path.stem.partition(".")
    if header.get("task") != stem_task or header.get("rung") != stem_rung or stem_rung not in RUNGS:
        raise ValueError(f"{path}: its header's task and rung must be its name's ({stem_task}, {stem_rung}; rungs: {RUNGS})")
    if not header.get("summary"):
        raise ValueError(f"{path}: no `// summary:` line")
    return Rung(language=language, task_id=stem_task, rung=stem_rung, summary=header["summary"],
                content="\n".join(lines[body_start:]).strip() + "\n", path=str(path))


@cache
def rungs(language: str) -> tuple[Rung, ...]:
    """Every rung of a language, the family examples' tasks first (ex*), then by task id."""
    found = [parse_rung(path, language) for path in sorted((folder() / language).glob("*.cpp"))]
    return tuple(sorted(found, key=lambda r: (not r.task_id.startswith("ex"), r.task_id, RUNGS.index(r.rung))))


@cache
def signatures() -> dict[str, dict[str, str]]:
    """language -> task id -> the kernel signature its backend renders for the task."""
    path = folder() / "signatures.yaml"
    return yaml.safe_load(path.read_text()) if path.exists() else {}


def render_signatures() -> dict[str, dict[str, str]]:
    """Render every rung task's signature afresh (loads each task: seconds)."""
    import tempfile

    from npu_pool.backends import get_backend
    from npu_pool.tasks.spec import load_task

    out: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for backend, language in (("cpu", "c"), ("npu-twin", "ascendc")):
            out[language] = {}
            for task_id in sorted({r.task_id for r in rungs(language)}):
                path = Path(tmp) / f"{task_id}.py"
                path.write_text(task_source(task_id)[1])
                task = load_task(path, max_bytes=2**26)
                out[language][task_id] = get_backend(backend).render_kernel_signature(task.kernel_signature)
    return out


def write_signatures() -> Path:
    path = folder() / "signatures.yaml"
    text = "# Written by `python -m memory_actor.ladder --write-signatures`; checked by tests/memory_actor/test_ladder.py.\n"
    path.write_text(text + yaml.dump(render_signatures(), Dumper=_BlockDumper, sort_keys=True, width=200))
    signatures.cache_clear()
    return path


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings as `|` blocks: the signatures stay readable in review."""


_BlockDumper.add_representer(str, lambda dumper, text: dumper.represent_scalar(
    "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None))


def item_name(family: str, task_id: str, rung: str) -> str:
    """The bank item's name: the family examples' first rungs keep the names they were seeded
    under (`rung_<family>`); every other rung names its task."""
    if rung == "first":
        return f"rung_{family}" if task_id.startswith("ex") else f"rung_{family}_{task_id}"
    return f"{rung}_rung_{family}_{task_id}"
