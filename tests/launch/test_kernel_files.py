"""What a run hands its user: RUN_DIR/kernels/, `evokernel export`, drop-in ModelNew files.

The default tests run a real single-process campaign (scripted HTTP LLM writing kernel-format
C, real g++ builds through the build cache) and check the kernels folder, the export layouts,
and that every drop-in ModelNew passes the anti-hack gate and imports nothing but torch. The
slow round trip builds them for real (load_inline, ~50 s each the first time; the harness
build cache and a persistent TORCH_EXTENSIONS_DIR make later runs fast): `evokernel verify`
judges each drop-in as a ModelNew candidate the way it judged the kernel, and each imports
and runs in a subprocess with nothing of EvoKernel on its path, at the task's original sizes.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from actors.messages import Attempt
from launch.cli import main
from launch.kernel_export import export_kernels
from launch.kernel_files import KernelFolder, kernel_task
from launch.kernel_index import KernelIndex
from npu_pool.antihack import check_python_candidate
from npu_pool.paths import cache_root
from npu_pool.tasks.spec import load_task
from tests.actors import replies
from tests.actors.openai_server import OpenAITestServer, ScriptedAgent
from tests.launch.kernel_agent import ELEMENTWISE, ElementwiseAgent, kernel_reply

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "cpu"
BUILD_CACHE = cache_root() / "test-build"
FAST = ["--set", "harness.compile_baseline=false", "--set", "harness.timed_trials=5",
        "--set", "harness.warmup_trials=1", "--set", "harness.correctness_trials=2",
        "--set", "harness.profile_input_sets=1", "--set", f"harness.build_cache_dir={BUILD_CACHE}",
        "--set", "harness.fit_max_bytes=4194304", "--set", "episode.lessons=false"]
TASKS = {"4_ReLU": "torch.relu(x)", "6_SiLU": "F.silu(x)"}


def run_campaign(server: OpenAITestServer, tmp_path: Path, fmt: str, iterations: int) -> int:
    return main([*FAST, "run", "--no-ray", "--tasks", ",".join(f"{t}.py" for t in TASKS), "--llm-base-url",
                 server.base_url, "--llm-model", server.model, "--memory", str(tmp_path / "bank"),
                 "--out", str(tmp_path / "run"), "--backend", "cpu", "--iterations", str(iterations),
                 "--candidate-format", fmt])


def kernel_code(expression: str, variant: int = 0) -> str:
    """The source the scripted agent sends, as the episode extracts it from the reply."""
    return kernel_reply(expression, variant).split("```cpp\n", 1)[1].rsplit("```", 1)[0]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """One campaign over ReLU and SiLU: two iterations each (a draft, then a refinement)."""
    tmp_path = tmp_path_factory.mktemp("kernels-campaign")
    with OpenAITestServer() as server:
        server.responder = ElementwiseAgent()
        assert run_campaign(server, tmp_path, "kernel", iterations=2) == 0
    return tmp_path / "run"


def test_the_run_folder_keeps_each_operators_first_and_best_kernel(campaign):
    index = KernelIndex.load(campaign / "kernels")
    assert sorted((e.task, e.kernel) for e in index.kernels) == [
        ("4_ReLU", "best"), ("4_ReLU", "first"), ("6_SiLU", "best"), ("6_SiLU", "first")]
    attempts = [json.loads(line) for line in (campaign / "attempts.jsonl").read_text().splitlines()]
    assert all("code" not in a for a in attempts)  # the source travels to kernels/, not into attempts.jsonl
    for entry in index.kernels:
        assert entry.backend == "cpu" and entry.candidate_format == "kernel" and entry.level == 1
        assert entry.problem == int(entry.task.split("_")[0])
        assert entry.sizes and entry.input_shapes["x"] and entry.latency_ms > 0 and entry.attempt_id
        recorded = next(a for a in attempts if a["attempt_id"] == entry.attempt_id)
        assert recorded["feasible"] and recorded["iteration"] == entry.iteration
        assert recorded["latency_ms"] == entry.latency_ms
        source = (campaign / "kernels" / entry.source).read_text()
        # the agent's draft (variant 0) or one of its refinements (numbered over the whole run)
        assert source in {kernel_code(ELEMENTWISE[TASKS[entry.task]], variant) for variant in range(5)}
        assert (entry.iteration == 1) == (source == kernel_code(ELEMENTWISE[TASKS[entry.task]]))
        assert entry.source.endswith(".cpp") and entry.modelnew.endswith("_modelnew.py")
    for task in TASKS:
        first = next(e for e in index.kernels if e.task == task and e.kernel == "first")
        best = next(e for e in index.kernels if e.task == task and e.kernel == "best")
        feasible = [a for a in attempts if a["task"] == task and a["feasible"]]
        assert first.iteration == min(a["iteration"] for a in feasible)
        assert best.latency_ms == min(a["latency_ms"] for a in feasible)
        assert best.source == f"{task}/best.cpp" and best.modelnew == f"{task}/best_modelnew.py"
        # a first kernel that is also the best is kept once, under the best's names
        kept_once = first.attempt_id == best.attempt_id
        assert (first.source == best.source) == kept_once
        assert (campaign / "kernels" / task / "first.cpp").exists() != kept_once
        files = sorted(p.name for p in (campaign / "kernels" / task).iterdir())
        assert files == (["best.cpp", "best_modelnew.py"] if kept_once else
                         ["best.cpp", "best_modelnew.py", "first.cpp", "first_modelnew.py"])


def test_drop_in_files_pass_the_hack_gate_and_import_only_torch(campaign):
    for entry in KernelIndex.load(campaign / "kernels").kernels:
        text = (campaign / "kernels" / entry.modelnew).read_text()
        rejected = [f for f in check_python_candidate(text) if f.severity == "reject"]
        assert not rejected, rejected
        tree = ast.parse(text)
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert {name.split(".")[0] for name in imported} <= {"torch", "os"}, imported  # os: the stale-lock check
        assert (campaign / "kernels" / entry.source).read_text() in text  # the source exactly as verified


def test_the_run_leaves_its_report_and_a_running_one_reloads_itself(campaign, tmp_path):
    from launch.report_writer import LiveReport

    final = (campaign / "report" / "report.html").read_text()  # written when the run ended
    assert ">Kernels</h2>" in final and 'http-equiv="refresh"' not in final
    live = LiveReport(campaign, interval_s=0)
    live.out_dir = tmp_path / "live"
    live.refresh()
    live._thread.join(timeout=120)
    page = (tmp_path / "live" / "report.html").read_text()
    assert '<meta http-equiv="refresh" content="30">' in page and "The campaign is running" in page
    first = live._thread
    live.interval_s = 3600
    live.refresh()  # an operator finishing right after: throttled, no second write
    assert live._thread is first


def test_the_report_lists_the_kernels(campaign, tmp_path):
    assert main(["report", str(campaign), "--out", str(tmp_path / "report")]) == 0
    html = (tmp_path / "report" / "report.html").read_text()
    assert ">Kernels</h2>" in html and "kernels/4_ReLU/best_modelnew.py" in html
    entries = KernelIndex.load(campaign / "kernels").kernels
    for entry in entries:
        assert f"kernels/{entry.source}" in html and f"kernels/{entry.modelnew}" in html
    kept_once = [e for e in entries if e.kernel == "first" and e.source.endswith("/best.cpp")]
    assert html.count("the first kernel is also the best") == len(kept_once)
    assert "every attempt failed the same way" not in html


def test_export_in_both_layouts(campaign, tmp_path, capsys):
    assert main(["export", str(campaign), "--out", str(tmp_path / "kb"), "--layout", "kernelbench"]) == 0
    names = sorted(p.name for p in (tmp_path / "kb").iterdir())
    assert names == ["evokernel_export.json", "level_1_problem_4_sample_0_kernel.py",
                     "level_1_problem_6_sample_0_kernel.py"]
    best = {e.task: e for e in KernelIndex.load(campaign / "kernels").kernels if e.kernel == "best"}
    assert (tmp_path / "kb" / names[1]).read_text() == (campaign / "kernels" / best["4_ReLU"].modelnew).read_text()
    index = KernelIndex.load(campaign / "kernels")
    for which in ("first", "best"):  # each kernel under its own names, also one the run kept once
        out = tmp_path / f"ek-{which}"
        assert main(["export", str(campaign), "--out", str(out), f"--{which}"]) == 0
        exported = json.loads((out / "index.json").read_text())
        assert exported["kernel"] == which and {k["task"] for k in exported["kernels"]} == set(TASKS)
        for kernel in exported["kernels"]:
            task = kernel["task"]
            assert (kernel["source"], kernel["modelnew"]) == (f"{task}/{which}.cpp", f"{task}/{which}_modelnew.py")
            kept = next(e for e in index.kernels if e.task == task and e.kernel == which)
            assert (out / kernel["source"]).read_bytes() == (campaign / "kernels" / kept.source).read_bytes()
            assert (out / kernel["modelnew"]).read_bytes() == (campaign / "kernels" / kept.modelnew).read_bytes()
        assert sorted(str(p.relative_to(out)) for p in out.rglob("*.*")) == sorted(
            ["index.json"] + [f"{task}/{which}{end}" for task in TASKS for end in (".cpp", "_modelnew.py")])
        assert f"wrote 4 file(s) of the {which} kernels" in capsys.readouterr().out
    assert main(["export", str(tmp_path), "--out", str(tmp_path / "x")]) == 1  # not a run with kernels
    assert "no kernels/index.json" in capsys.readouterr().err


def test_a_run_failing_the_same_way_every_time_says_so_with_the_fix(tmp_path, capsys):
    with OpenAITestServer() as server:  # asked for ModelNew files, the model writes kernel functions
        server.responder = ScriptedAgent([replies.FAST] * 4)
        assert run_campaign(server, tmp_path, "modelnew", iterations=2) == 0
    err = capsys.readouterr().err
    assert "every attempt failed the same way: 4 of 4 attempts over 2 operator(s) at the no_code gate" in err
    assert "--candidate-format kernel" in err and "what it wrote instead: RUN_DIR/replies/6_SiLU/2-draft.md" in err
    lines = [json.loads(line) for line in (tmp_path / "run" / "attempts.jsonl").read_text().splitlines()]
    assert sorted(a["reply_file"] for a in lines) == [f"replies/{t}/{i}-draft.md" for t in TASKS for i in (1, 2)]
    assert replies.FAST.strip() in (tmp_path / "run" / lines[0]["reply_file"]).read_text()  # what the model wrote
    assert not (tmp_path / "run" / "kernels" / "index.json").exists()  # no kernel to keep
    assert main(["report", str(tmp_path / "run"), "--out", str(tmp_path / "report")]) == 0
    html = (tmp_path / "report" / "report.html").read_text()
    assert "Every attempt failed the same way" in html and "--candidate-format kernel" in html


def test_output_shapes_follow_the_inputs_that_really_set_them():
    gemm = kernel_task(load_task(SUITE / "level2" / "10_GemmScaleHardtanh.py", max_bytes=4 * 2**20), "cpu", "kernel")
    # in_features == out_features at every size the file sets: only the doubled probes tell them apart
    assert [(d.arg, d.dim) for d in gemm.output_dims[0]] == [("x", 0), ("linear_weight", 0)]
    pool = kernel_task(load_task(SUITE / "level1" / "31_MaxPool2d.py", max_bytes=4 * 2**20), "cpu", "kernel")
    assert pool.dropin_error and "follows no input dimension" in pool.dropin_error


def _kept(run_dir: Path) -> dict[str, tuple[str | None, str, str | None]]:
    """kernels/index.json of 4_ReLU: which -> (attempt id, source, modelnew)."""
    return {e.kernel: (e.attempt_id, e.source, e.modelnew) for e in KernelIndex.load(run_dir / "kernels").kernels}


def test_the_first_kernel_is_kept_once_while_it_is_the_best(tmp_path):
    task = kernel_task(load_task(SUITE / "level1" / "4_ReLU.py", max_bytes=4 * 2**20), "cpu", "kernel")
    folder = KernelFolder(tmp_path)
    folder.operator_started(task)
    kernels = tmp_path / "kernels" / "4_ReLU"

    def attempt(iteration: int, latency_ms: float, variant: int) -> Attempt:
        return Attempt(run_id="r", task="4_ReLU", iteration=iteration, stage="refine", gate="ok", feasible=True,
                       latency_ms=latency_ms, code=kernel_code("x[i]", variant), attempt_id=f"a{iteration}")

    folder.record(attempt(1, 2.0, 0))
    both = ("a1", "4_ReLU/best.cpp", "4_ReLU/best_modelnew.py")
    assert _kept(tmp_path) == {"best": both, "first": both}
    assert sorted(p.name for p in kernels.iterdir()) == ["best.cpp", "best_modelnew.py"]
    assert "EvoKernel's best (and first feasible) kernel for 4_ReLU" in (kernels / "best_modelnew.py").read_text()
    exported = export_kernels(tmp_path, tmp_path / "ek", "evokernel", "first")  # under the first's names
    assert sorted(exported.written) == ["4_ReLU/first.cpp", "4_ReLU/first_modelnew.py"]
    assert (tmp_path / "ek" / "4_ReLU" / "first.cpp").read_bytes() == (kernels / "best.cpp").read_bytes()
    [entry] = json.loads((tmp_path / "ek" / "index.json").read_text())["kernels"]
    assert (entry["kernel"], entry["source"], entry["modelnew"]) == ("first", "4_ReLU/first.cpp", "4_ReLU/first_modelnew.py")
    folder.record(attempt(2, 2.0, 1))  # as fast, not faster: the earlier stays
    folder.record(attempt(3, 3.0, 2))
    assert _kept(tmp_path) == {"best": both, "first": both}
    again = KernelFolder(tmp_path)  # a restarted recorder: a faster kernel parts them
    again.record(attempt(4, 1.0, 3))
    assert _kept(tmp_path) == {"best": ("a4", "4_ReLU/best.cpp", "4_ReLU/best_modelnew.py"),
                               "first": ("a1", "4_ReLU/first.cpp", "4_ReLU/first_modelnew.py")}
    assert (kernels / "first.cpp").read_text() == kernel_code("x[i]", 0)
    assert (kernels / "best.cpp").read_text() == kernel_code("x[i]", 3)
    first_dropin, best_dropin = (kernels / "first_modelnew.py").read_text(), (kernels / "best_modelnew.py").read_text()
    assert "EvoKernel's first kernel for 4_ReLU" in first_dropin and kernel_code("x[i]", 0) in first_dropin
    assert "EvoKernel's best kernel for 4_ReLU" in best_dropin and kernel_code("x[i]", 3) in best_dropin
    again.record(attempt(5, 0.5, 4))  # the first keeps its own files
    assert _kept(tmp_path)["first"] == ("a1", "4_ReLU/first.cpp", "4_ReLU/first_modelnew.py")
    assert _kept(tmp_path)["best"][0] == "a5" and (kernels / "first.cpp").read_text() == kernel_code("x[i]", 0)


def test_a_restarted_operator_starts_its_kernels_over(tmp_path):
    task = kernel_task(load_task(SUITE / "level1" / "4_ReLU.py", max_bytes=4 * 2**20), "cpu", "kernel")
    folder = KernelFolder(tmp_path)
    folder.operator_started(task)
    folder.record(Attempt(run_id="r", task="4_ReLU", iteration=1, stage="draft", gate="ok", feasible=True,
                          latency_ms=2.0, code=kernel_code("x[i]"), attempt_id="a1"))
    assert len(KernelIndex.load(tmp_path / "kernels").kernels) == 2
    again = KernelFolder(tmp_path)  # a resumed run or a restarted recorder: index and tasks read back
    assert len(again.entries) == 2
    again.record(Attempt(run_id="r", task="4_ReLU", iteration=2, stage="refine", gate="ok", feasible=True,
                         latency_ms=1.0, code=kernel_code("x[i]", 1), attempt_id="a2"))
    best = next(e for e in KernelIndex.load(tmp_path / "kernels").kernels if e.kernel == "best")
    assert best.attempt_id == "a2" and best.modelnew == "4_ReLU/best_modelnew.py"
    again.operator_started(task)  # the operator runs again from the start
    assert KernelIndex.load(tmp_path / "kernels").kernels == [] and not (tmp_path / "kernels" / "4_ReLU").exists()


# -- the round trip (slow: real load_inline builds) ------------------------------------------

GEMM_KERNEL = """
extern "C" void kernel(const float* x, const float* linear_weight, const float* linear_bias, float* out,
                       int64_t in_features, int64_t out_features, double scaling_factor, double min_val,
                       double max_val, int64_t x_d0, int64_t x_d1, int64_t linear_weight_d0,
                       int64_t linear_weight_d1, int64_t linear_bias_d0, int64_t out_d0, int64_t out_d1) {
    #pragma omp parallel for
    for (int64_t i = 0; i < x_d0; ++i) {
        for (int64_t j = 0; j < linear_weight_d0; ++j) {
            float acc = linear_bias[j];
            for (int64_t k = 0; k < x_d1; ++k) acc += x[i * x_d1 + k] * linear_weight[j * linear_weight_d1 + k];
            float v = acc * (float)scaling_factor;
            out[i * out_d1 + j] = std::min(std::max(v, (float)min_val), (float)max_val);
        }
    }
}
"""

STANDALONE = textwrap.dedent("""
    import importlib.util, sys
    import torch
    def load(path, name):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    dropin, task = load(sys.argv[1], "dropin"), load(sys.argv[2], "task")
    assert not [m for m in sys.modules if m.split(".")[0] in ("launch", "npu_pool", "actors", "memory_actor")]
    init = task.get_init_inputs()
    torch.manual_seed(0); reference = task.Model(*init)
    torch.manual_seed(0); candidate = dropin.ModelNew(*init)
    inputs = task.get_inputs()  # the task's own (original) sizes, not the ones it was verified at
    with torch.no_grad():
        expected, got = reference(*inputs), candidate(*inputs)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    print("OK", tuple(got.shape))
""")


def _verify(task_file: Path, candidate: Path, fmt: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "launch.cli", *FAST, "verify", str(task_file), str(candidate),
                           "--format", fmt, "--json"], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _standalone(dropin: Path, task_file: Path, tmp_path: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["TORCH_EXTENSIONS_DIR"] = str(cache_root() / "test-torch-extensions")  # builds kept between runs
    done = subprocess.run([sys.executable, "-I", "-c", STANDALONE, str(dropin), str(task_file)],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
@pytest.mark.timeout(1800)  # up to six load_inline builds the first time, on a busy machine
def test_every_exported_drop_in_passes_verify_like_its_kernel_and_runs_without_evokernel(campaign, tmp_path):
    # A task with parameters and constructor scalars beside the campaign's elementwise ones.
    gemm_file = SUITE / "level2" / "10_GemmScaleHardtanh.py"
    gemm_code = '#include <algorithm>\n#include <cstdint>' + GEMM_KERNEL
    folder = KernelFolder(campaign)
    folder.operator_started(kernel_task(load_task(gemm_file, max_bytes=4 * 2**20), "cpu", "kernel"))
    folder.record(Attempt(
        run_id="r", task="10_GemmScaleHardtanh", iteration=1, stage="draft", gate="ok", feasible=True,
        latency_ms=1.0, code=gemm_code, attempt_id="gemm"))
    out = tmp_path / "export"
    done = export_kernels(campaign, out, "kernelbench", "best")
    assert len(done.written) == 3 and not done.skipped
    task_files = {1: {4: SUITE / "level1" / "4_ReLU.py", 6: SUITE / "level1" / "6_SiLU.py"},
                  2: {10: gemm_file}}
    for entry in json.loads((out / "evokernel_export.json").read_text())["kernels"]:
        task_file = task_files[entry["level"]][entry["problem"]]
        dropin = out / entry["modelnew"]
        kernel = campaign / "kernels" / next(e.source for e in KernelIndex.load(campaign / "kernels").kernels
                                             if e.task == entry["task"] and e.kernel == "best")
        as_kernel, as_modelnew = _verify(task_file, kernel, "kernel"), _verify(task_file, dropin, "modelnew")
        assert as_kernel["feasible"] and as_modelnew["feasible"], (as_kernel, as_modelnew)
        assert (as_modelnew["gate"], as_modelnew["flags"]) == (as_kernel["gate"], as_kernel["flags"])
        assert _standalone(dropin, task_file, tmp_path).startswith("OK")
