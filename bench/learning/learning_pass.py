"""The learning benchmark's learning pass: per arm, the normal online campaign over the
curriculum, building that arm's bank, which the evaluation then freezes (frozen.json).

Every arm is a single-process campaign (launch.campaign.Campaign, the code of `evokernel run
--no-ray`) from a fresh copy of one bank seeded with the backend's bundle. An arm is done when
its run folder's summary.json has `finished_at` and no error. After every finished operator the
arm's bank is copied (banks/<arm>.after-<k>, ArmCheckpoints), so an arm killed on operator k+1
resumes there: its bank back as it was after operator k, the k operators' attempts kept, the cut
operator's moved aside (launch.campaign.Campaign.resume). Without a matching copy the arm runs
again from scratch (a half-run arm's bank has learned from attempts that would be counted twice).
A resumed arm is the same experiment, not the same bits: the bank's random ranking stream and
the model's sampling start again.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from bench.learning.evaluation import FrozenBankChanged, bank_digest
from bench.learning.evaluation import finished as pass_finished  # one rule for every pass
from bench.learning.plan import ARMS, arm_memory
from bench.learning.publish import note_commit
from launch.campaign import Campaign, CampaignError, finished_operators, load_summary


class LearningBenchmark:
    """Runs arms into one results folder; finished arms are skipped."""

    def __init__(self, settings, out: Path):
        self.settings, self.out = settings, out
        self.banks = out / "banks"
        self.arms_dir = out / "arms"

    def arm_dir(self, name: str) -> Path:
        return self.arms_dir / name

    def finished(self, name: str) -> bool:
        return pass_finished(self.arm_dir(name))

    def seed_bank(self) -> Path:
        """The seeded empty bank every arm starts from (a copy of it), made once."""
        from memory_actor.bank import MemoryBank
        from memory_actor.seeding import seed_items
        from npu_pool.backends import get_backend

        seeded = self.banks / "seeded"
        done = self.banks / "seeded.done"
        if done.exists() and seeded.exists():
            return seeded
        shutil.rmtree(seeded, ignore_errors=True)
        self.banks.mkdir(parents=True, exist_ok=True)
        backend = get_backend(self.settings.harness.backend).name
        bank = MemoryBank(self.settings.memory.model_copy(update={"uri": str(seeded)}))
        try:
            bank.add(seed_items(backend, set(bank.items)))
        finally:
            bank.close()
        done.write_text(backend + "\n")
        return seeded

    def run_arm(self, name: str, memory: dict[str, Any], tasks: list[Path], iterations: int, seed: int,
                episode: dict[str, Any] | None = None) -> bool:
        """Run one arm unless it finished earlier; returns whether it ran now. `episode`: the
        arm's episode settings beyond the benchmark's (v5's value arm: start_from_rung)."""
        if self.finished(name):
            print(f"[learning] {name}: finished earlier, skipped", file=sys.stderr)
            return False
        bank = self.banks / name
        settings = self.settings.model_copy(update={
            "memory": arm_memory(self.settings, memory, bank, seed),
            "episode": self.settings.episode.model_copy(update={**(episode or {}), "iterations": iterations}),
        })
        print(f"[learning] {name}: {memory}{f', episode {episode}' if episode else ''}, seed {seed}, {len(tasks)} operators x {iterations} iterations: "
              + ", ".join(p.stem for p in tasks), file=sys.stderr)
        checkpoints = ArmCheckpoints(self.banks, name)
        resumed = self._resumed(name, settings, checkpoints)
        campaign = resumed or self._fresh(name, settings, checkpoints)
        note_commit(self.arm_dir(name), "resumed" if resumed else "started")

        async def checkpoint(memory_port: Any) -> None:
            await checkpoints.save(memory_port, [op.task for op in finished_operators(campaign.operators)])

        campaign.after_operator = checkpoint
        started = time.perf_counter()
        asyncio.run(campaign.run(tasks))
        checkpoints.clear()
        print(f"[learning] {name}: done in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        return True

    def _fresh(self, name: str, settings, checkpoints: ArmCheckpoints) -> Campaign:
        """The arm from the start: a fresh copy of the seeded bank, an empty run folder."""
        checkpoints.clear()
        bank = self.banks / name
        shutil.rmtree(bank, ignore_errors=True)
        shutil.rmtree(self.arm_dir(name), ignore_errors=True)
        shutil.copytree(self.seed_bank(), bank)
        return Campaign(settings, self.arm_dir(name), run_id=f"learning-{name}-{self.out.name}")

    def _resumed(self, name: str, settings, checkpoints: ArmCheckpoints) -> Campaign | None:
        """The arm continued after its last finished operator, when a copy of its bank from
        exactly then exists; None otherwise."""
        run_dir = self.arm_dir(name)
        if not (run_dir / "summary.json").is_file():
            return None
        try:
            done = [op.task for op in finished_operators(load_summary(run_dir).operators)]
        except CampaignError:
            return None
        copy = checkpoints.matching(done) if done else None
        if copy is None:
            return None
        try:
            campaign, _ = Campaign.resume(settings, run_dir)
        except CampaignError as exc:  # say the task files moved: the arm starts over
            print(f"[learning] {name}: cannot resume ({exc}); running it again", file=sys.stderr)
            return None
        bank = self.banks / name
        shutil.rmtree(bank, ignore_errors=True)
        shutil.copytree(copy, bank)
        print(f"[learning] {name}: resumed after {len(done)} finished operator(s) ({', '.join(done)}), "
              f"bank from {copy.name}", file=sys.stderr)
        return campaign

    def learn(self, arms: list[str], curriculum: list[Path], iterations: int, seed: int,
              memories: dict[str, dict[str, Any]] | None = None,
              episodes: dict[str, dict[str, Any]] | None = None) -> dict[str, str]:
        """The learning pass of every arm (finished ones skipped), with its memory settings
        (`memories`, else ARMS) and episode settings (`episodes`, screening.arm_episodes); each bank's digest is recorded in frozen.json when its pass ends,
        and is what the evaluation checks from then on."""
        frozen = self.out / "frozen.json"
        digests = json.loads(frozen.read_text()) if frozen.is_file() else {}
        for arm in arms:
            self.run_arm(f"learn-{arm}", (memories or {}).get(arm, ARMS[arm]), curriculum, iterations, seed,
                         (episodes or {}).get(arm))
            bank = self.banks / f"learn-{arm}"
            if not bank.is_dir():
                raise FrozenBankChanged(f"{bank} is missing: the evaluation needs the bank the learning pass built "
                                        f"(keep banks/learn-* with the state, or delete arms/learn-{arm} to learn again)")
            digests.setdefault(arm, bank_digest(bank, self.settings))  # frozen from here on
            frozen.write_text(json.dumps(digests, indent=2) + "\n")
        return digests


class ArmCheckpoints:
    """Copies of an arm's bank after its k-th finished operator: folder banks/<arm>.after-<k>
    plus <arm>.after-<k>.json naming the k operators (written last: a copy without it is
    incomplete). Only the newest is kept."""

    def __init__(self, banks: Path, name: str):
        self.banks, self.name = banks, name

    def _copies(self) -> list[tuple[int, Path]]:
        found = []
        for folder in self.banks.glob(f"{self.name}.after-*"):
            count = folder.name.rsplit("-", 1)[1]
            if folder.is_dir() and count.isdigit():
                found.append((int(count), folder))
        return sorted(found)

    async def save(self, memory_port: Any, operators: list[str]) -> None:
        final = self.banks / f"{self.name}.after-{len(operators)}"
        partial = final.with_name(final.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        await memory_port.snapshot(str(partial))
        self._remove(final)
        os.replace(partial, final)
        meta = final.with_name(final.name + ".json.partial")
        meta.write_text(json.dumps({"operators": operators}) + "\n")
        os.replace(meta, final.with_name(final.name + ".json"))
        for count, folder in self._copies():
            if count < len(operators):
                self._remove(folder)

    def matching(self, operators: list[str]) -> Path | None:
        """The copy taken right after exactly these operators finished, if there is one."""
        for _, folder in reversed(self._copies()):
            meta = folder.with_name(folder.name + ".json")
            if meta.is_file() and json.loads(meta.read_text()).get("operators") == operators:
                return folder
        return None

    def clear(self) -> None:
        for _, folder in self._copies():
            self._remove(folder)
        for leftover in self.banks.glob(f"{self.name}.after-*.partial"):
            shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()

    @staticmethod
    def _remove(folder: Path) -> None:
        folder.with_name(folder.name + ".json").unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)

