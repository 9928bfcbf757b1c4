"""Device-pinned verifier and profiler pools, and the pool actor that schedules candidates on them.

Every device slot (devices.plan_slots) is one bundle of a placement group. Its verifier
(`verifier/npu:3`) and profiler (`profiler/npu:3`) actors share the bundle, each asking half
of its NPU/GPU, so Ray gives both the same device and sets ASCEND_RT_VISIBLE_DEVICES (or
CUDA_VISIBLE_DEVICES) to it; every sandboxed worker inherits that variable. The pool actor
(`pool/evaluator`) hands each candidate one idle device and keeps it for the whole
evaluation, so a device never verifies one kernel while timing another. Where kernels run
on the CPU (CPU slots, fake devices), slots of one node share its cores: timing then takes
the node exclusively (a reader-writer gate), so measurements stay undisturbed there too.
A device actor that dies is restarted by Ray in its bundle (same device) and the candidate
is retried once on the next idle device; a second loss becomes an `infra` verdict (no reward).
A candidate is checked and timed in one sandboxed child by the profiler (verification
alone goes to the verifier); on CPU slots the child holds the node shared while it builds
and checks, and alone while it is timed (npu_pool.node_gate: a lock across processes).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from typing import Any

import ray
import structlog
from pydantic import BaseModel, Field
from ray.exceptions import RayActorError
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from npu_pool.config import HarnessConfig
from npu_pool.devices import (
    CPU_HOSTED_BACKENDS,
    RAY_RESOURCE,
    DeviceKind,
    FakeDevices,
    cluster_nodes,
    device_kind,
    evaluating_backend,
    plan_slots,
)
from npu_pool.node_gate import NodeLock
from npu_pool.tasks.spec import TaskSpec
from npu_pool.verdict import Candidate, Evaluation, ProfileReport, Verdict

log = structlog.get_logger("npu_pool.pools")
_EVAL_SECONDS = [0.5, 1, 2, 5, 10, 30, 60, 120, 300]


class DeviceInfo(BaseModel):
    """Who a device actor is and where it landed."""

    name: str
    role: str
    kind: DeviceKind
    device: str = Field(description="e.g. npu:3, the device id Ray assigned (or the CPU slot number)")
    node_id: str
    node_ip: str
    pid: int
    visible_devices: str | None = None
    fake: bool = False
    backend: str = Field(description="the harness backend that evaluates here (cpu for fake devices)")


def _device_name(role: str, kind: str, device_id: str, host: str | None) -> str:
    return f"{role}/{host}/{kind}:{device_id}" if host else f"{role}/{kind}:{device_id}"


class DeviceActor:
    """What a Verifier and a Profiler share: one device, one candidate at a time (a sync actor),
    the node gate where kernels run on the CPU, and the history of what ran when."""

    ROLE = ""

    def __init__(self, name: str, kind: DeviceKind, config: HarnessConfig, fake: bool, node_gate: bool = True):
        self.name, self.role, self.kind, self.fake = name, self.ROLE, kind, fake
        backend = evaluating_backend(kind, config.backend, fake)
        self.config = config.model_copy(update={"backend": backend})
        # Kernels that run on the CPU share the node's cores with every other slot there.
        self.node_gate = node_gate and (backend == "cpu" or backend in CPU_HOSTED_BACKENDS)
        self.intervals: list[tuple[str, float, float]] = []
        self.log = log.bind(actor=name)
        if fake:
            self.log.warning("fake_device", detail=f"{kind} declared to Ray but absent: evaluating with the cpu backend")
        self.log.info("device_actor_ready", pid=os.getpid(), backend=backend)

    def __repr__(self) -> str:  # the dashboard's and the log prefix's name for this actor
        return self.name

    def describe(self) -> DeviceInfo:
        context = ray.get_runtime_context()
        ids = context.get_accelerator_ids().get(RAY_RESOURCE[self.kind], []) if self.kind != "cpu" else []
        env = {"npu": "ASCEND_RT_VISIBLE_DEVICES", "cuda": "CUDA_VISIBLE_DEVICES"}.get(self.kind)
        return DeviceInfo(name=self.name, role=self.role, kind=self.kind, device=self.name.rsplit("/", 1)[-1]
                          if not ids else f"{self.kind}:{ids[0]}", node_id=context.get_node_id(),
                          node_ip=ray.util.get_node_ip_address(), pid=os.getpid(),
                          visible_devices=os.environ.get(env) if env else None, fake=self.fake,
                          backend=self.config.backend)

    def _note_holds(self, verdict: Verdict) -> None:
        """When this actor's child held the node (node-shared, node-exclusive): for history()."""
        for kind, begin, end in verdict.sandbox.get("node_holds", []):
            self.intervals.append((f"node-{kind}", begin, end))

    def _node_lock(self) -> NodeLock | None:
        return NodeLock() if self.node_gate else None

    def _note(self, phase: str, started: float) -> None:
        self.intervals = [*self.intervals[-999:], (phase, started, time.time())]

    def history(self) -> list[tuple[str, float, float]]:
        """(phase, start, end) of the last 1000 evaluations, wall clock: what ran here and when."""
        return list(self.intervals)


class Verifier(DeviceActor):
    """`verifier/<device>`: anti-hack, compile and correctness gates for a candidate that needs no
    timing, in a sandboxed child on its device."""

    ROLE = "verifier"

    def verify(self, task: TaskSpec, candidate: Candidate) -> Verdict:
        from npu_pool.verifier import verify

        started = time.time()
        try:
            verdict = verify(task, candidate, self.config, node_lock=self._node_lock())
            self._note_holds(verdict)
            return verdict
        finally:
            self._note("verify", started)


class Profiler(DeviceActor):
    """`profiler/<device>`: checks and times a candidate in one sandboxed child on its device
    (the same device as its verifier's, which it shares)."""

    ROLE = "profiler"

    def profile(self, task: TaskSpec, candidate: Candidate) -> tuple[Verdict, ProfileReport | None]:
        """Check, then time, in one sandboxed child: a kernel is never timed unchecked."""
        from npu_pool.verifier import evaluate

        started = time.time()
        try:
            verdict, report = evaluate(task, candidate, self.config, profile=True, node_lock=self._node_lock())
            self._note_holds(verdict)
            return verdict, report
        finally:
            self._note("profile", started)


class _Metrics:
    def __init__(self) -> None:
        from ray.util import metrics

        self.evaluations = metrics.Counter("evokernel_pool_evaluations", "candidates evaluated on a device",
                                           tag_keys=("device", "phase", "gate"))
        self.seconds = metrics.Histogram("evokernel_pool_eval_seconds", "device time of one phase",
                                         boundaries=_EVAL_SECONDS, tag_keys=("phase",))
        self.idle = metrics.Gauge("evokernel_pool_idle_devices", "devices waiting for a candidate")
        self.waiting = metrics.Gauge("evokernel_pool_waiting_candidates", "candidates waiting for a device")
        self.lost = metrics.Counter("evokernel_pool_actor_deaths", "device actors lost mid-evaluation",
                                    tag_keys=("device",))


class DevicePoolActor:
    """`pool/evaluator`: FIFO over idle devices; the device's profiler checks and times a
    candidate in one sandboxed child, its verifier checks what needs no timing."""

    def __init__(self, members: list[tuple[DeviceInfo, str]], recover_s: float = 900.0):
        # (verifier info, profiler name) per device; handles looked up by name, so that a restarted
        # pool needs nothing from the object store
        namespace = ray.get_runtime_context().namespace
        self.members = [(info, ray.get_actor(info.name, namespace=namespace),
                         ray.get_actor(profiler, namespace=namespace)) for info, profiler in members]
        self.counts = {info.name: 0 for info, _ in members}
        self.busy_s = {info.name: 0.0 for info, _ in members}  # time held by a candidate (gates included)
        self._idle: asyncio.Queue[int] | None = None
        self._waiting = 0
        self._recovering: set[asyncio.Future[None]] = set()  # keeps the recovery tasks referenced
        self.metrics = _Metrics()
        self.recover_s = recover_s  # harness.device_recover_s

    def __repr__(self) -> str:
        return "pool/evaluator"

    def _queue(self) -> asyncio.Queue[int]:
        if self._idle is None:
            self._idle = asyncio.Queue()
            for index in range(len(self.members)):
                self._idle.put_nowait(index)
        return self._idle

    async def evaluate(self, task: TaskSpec, candidate: Candidate, profile: bool = True) -> Evaluation:
        lost: list[str] = []
        while len(lost) < 2:
            index = await self._take()
            info, verifier, profiler = self.members[index]
            if not await self._alive(index):  # died while idle: recover it, take another
                self._recovering.add(asyncio.ensure_future(self._recover(index)))
                continue
            held = time.perf_counter()
            try:
                verdict, report = await self._on_device(info, verifier, profiler, task, candidate, profile)
            except RayActorError as exc:  # Ray restarts the actor in its bundle; try the next idle device
                self.metrics.lost.inc(tags={"device": info.device})
                log.warning("device_actor_lost", device=info.name, task=task.task_id, error=str(exc)[:300])
                lost.append(f"{info.device}: {str(exc).splitlines()[0][:200]}")
                self._recovering.add(asyncio.ensure_future(self._recover(index)))
                continue
            self._put_back(index)
            self.counts[info.name] += 1
            self.busy_s[info.name] += time.perf_counter() - held
            return Evaluation(verdict=verdict, profile=report, device=info.device, node_id=info.node_id,
                                  retried=bool(lost))
        # Two devices lost under one candidate: the machine, not the candidate (never a reward).
        return Evaluation(verdict=Verdict(feasible=False, gate="infra", category="device_lost",
                                              reason="the device actor died twice while evaluating this candidate",
                                              details="\n".join(lost), sizes=task.sizes),
                              device="", node_id="", retried=True)

    def _put_back(self, index: int) -> None:
        self._queue().put_nowait(index)
        self.metrics.idle.set(self._queue().qsize())

    async def _alive(self, index: int, timeout_s: float = 30.0) -> bool:
        _, verifier, profiler = self.members[index]
        try:  # bounded: a call to an actor Ray cannot restart (its node gone with its bundle) waits forever
            await asyncio.wait_for(asyncio.gather(verifier.describe.remote(), profiler.describe.remote()), timeout_s)
        except (RayActorError, TimeoutError):
            return False
        return True

    async def _recover(self, index: int) -> None:
        """Back in the idle queue once both actors of the device answer again (restarted by Ray)."""
        info = self.members[index][0]
        deadline = time.monotonic() + self.recover_s
        while time.monotonic() < deadline:
            if await self._alive(index):
                log.info("device_back", device=info.name)
                self._put_back(index)
                return
            await asyncio.sleep(0.5)
        log.error("device_dropped", device=info.name, reason=f"its actors did not come back in {self.recover_s:.0f} s")

    async def _take(self) -> int:
        self._waiting += 1
        self.metrics.waiting.set(self._waiting)
        try:
            return await self._queue().get()
        finally:
            self._waiting -= 1
            self.metrics.waiting.set(self._waiting)
            self.metrics.idle.set(self._queue().qsize())

    async def _on_device(self, info: DeviceInfo, verifier: Any, profiler: Any, task: TaskSpec, candidate: Candidate,
                         profile: bool) -> tuple[Verdict, ProfileReport | None]:
        started = time.perf_counter()
        if profile:  # one child checks, then times only what passed (no second build, no second import)
            verdict, report = await profiler.profile.remote(task, candidate)
            self._observe(info, "verify+profile", verdict.gate, started)
            return verdict, report
        verdict = await verifier.verify.remote(task, candidate)
        self._observe(info, "verify", verdict.gate, started)
        return verdict, None

    def _observe(self, info: DeviceInfo, phase: str, gate: str, started: float) -> None:
        self.metrics.evaluations.inc(tags={"device": info.device, "phase": phase, "gate": gate})
        self.metrics.seconds.observe(time.perf_counter() - started, tags={"phase": phase})

    async def stats(self) -> dict[str, Any]:
        """Per device (its verifier's info): where it runs, candidates evaluated, seconds held."""
        return {"members": [{**info.model_dump(), "evaluations": self.counts[info.name],
                             "busy_s": round(self.busy_s[info.name], 2)} for info, _, _ in self.members],
                "idle": self._queue().qsize(), "waiting": self._waiting}


class PoolError(Exception):
    """The pools cannot be built: no device, or the devices stay taken (another campaign?)."""


@ray.remote(num_cpus=0)
def _device_ids(resource: str) -> list[str]:
    """Run inside a whole bundle: the accelerator ids Ray gave it (fixed for the group's life)."""
    return [str(i) for i in ray.get_runtime_context().get_accelerator_ids().get(resource, [])]


class DevicePools:
    """Builds the device slots, their verifier and profiler actors and the pool actor.

    `roles` names the class of each device role ("verifier", "profiler"; launch.ray_campaign.roles has the
    campaign's table). Each asks for half of its slot: half the accelerator (so Ray pins both to
    the same device), or half the slot's CPU cores where kernels run on the CPU.
    """

    def __init__(self, config: HarnessConfig, roles: Mapping[str, type[DeviceActor]], *, fake: FakeDevices | None = None, cpus_per_slot: float = 1.0,
                 max_devices: int | None = None, max_restarts: int = -1, cpu_node_gate: bool = True,
                 ready_timeout_s: float = 120.0, pool_name: str = "pool/evaluator"):
        missing = {"verifier", "profiler"} - set(roles)
        if missing:
            raise ValueError(f"DevicePools needs a class for the device roles {sorted(missing)}")
        self.config, self.roles, self.fake = config, dict(roles), fake
        self.cpus_per_slot, self.max_devices, self.max_restarts = cpus_per_slot, max_devices, max_restarts
        self.cpu_node_gate, self.ready_timeout_s, self.pool_name = cpu_node_gate, ready_timeout_s, pool_name
        self.kind: DeviceKind = "cpu"
        self.group: Any = None
        self.verifiers: list[DeviceInfo] = []
        self.profilers: list[DeviceInfo] = []
        self.handles: list[Any] = []
        self.pool: Any = None

    @property
    def evaluating_backend(self) -> str:
        """The harness backend the device actors evaluate with."""
        return evaluating_backend(self.kind, self.config.backend, self.fake is not None)

    def start(self) -> DevicePools:
        nodes = cluster_nodes()
        self.kind = self.fake.kind if self.fake else device_kind(self.config.backend, nodes)
        slots = plan_slots(nodes, self.kind, self.cpus_per_slot, self.max_devices)
        if not slots:
            raise PoolError(f"the cluster has no {self.kind} device (Ray resource {RAY_RESOURCE[self.kind]})")
        self.group = placement_group([slot.bundle for slot in slots], strategy="SPREAD")
        ready, _ = ray.wait([self.group.ready()], timeout=self.ready_timeout_s)
        if not ready:
            self.shutdown()
            raise PoolError(f"{len(slots)} {self.kind} slots were not free within {self.ready_timeout_s:.0f} s "
                            "(another campaign holding them?)")
        bundle_nodes = ray.util.placement_group_table(self.group)["bundles_to_node_id"]
        ips = {n.node_id: n.node_ip for n in nodes}
        several = len(set(bundle_nodes.values())) > 1
        unique_ips = len({ips.get(n) for n in set(bundle_nodes.values())}) == len(set(bundle_nodes.values()))
        per_node_ordinal: dict[str, int] = {}
        for index, slot in enumerate(slots):
            node_id = bundle_nodes[index]
            strategy = PlacementGroupSchedulingStrategy(self.group, placement_group_bundle_index=index)
            if self.kind == "cpu":
                device_id = str(per_node_ordinal.setdefault(node_id, 0))
                per_node_ordinal[node_id] += 1
                share: dict[str, Any] = {"num_cpus": slot.bundle["CPU"] / 2}
            else:
                resource = RAY_RESOURCE[self.kind]
                probe = _device_ids.options(scheduling_strategy=strategy, **_ask(resource, 1.0))
                device_id = ",".join(ray.get(probe.remote(resource), timeout=self.ready_timeout_s))
                share = {"num_cpus": 0, **_ask(resource, 0.5)}
            host = (ips.get(node_id) if unique_ips else node_id[:8]) if several else None
            for role in ("verifier", "profiler"):
                name = _device_name(role, self.kind, device_id, host)
                self.handles.append(ray.remote(self.roles[role]).options(
                    name=name, scheduling_strategy=strategy, max_restarts=self.max_restarts, max_task_retries=0,
                    **share).remote(name, self.kind, self.config, self.fake is not None, self.cpu_node_gate))
        described = ray.get([h.describe.remote() for h in self.handles], timeout=self.ready_timeout_s)
        self.verifiers, self.profilers = described[0::2], described[1::2]  # the order they were started in
        members = [(info, self.profilers[i].name) for i, info in enumerate(self.verifiers)]
        self.pool = ray.remote(DevicePoolActor).options(
            name=self.pool_name, num_cpus=0, max_restarts=-1, max_task_retries=1, max_concurrency=10000,
        ).remote(members, self.config.device_recover_s)
        ray.get(self.pool.stats.remote(), timeout=self.ready_timeout_s)
        log.info("device_pools_ready", kind=self.kind, devices=[v.device for v in self.verifiers],
                 nodes=len(set(bundle_nodes.values())), backend=self.evaluating_backend, fake=self.fake is not None)
        return self

    def shutdown(self) -> None:
        for handle in [self.pool, *self.handles]:
            if handle is not None:
                ray.kill(handle, no_restart=True)
        self.handles, self.pool = [], None
        if self.group is not None:
            remove_placement_group(self.group)
            self.group = None


def _ask(resource: str, amount: float) -> dict[str, Any]:
    """Ray takes GPUs as num_gpus, every other accelerator as a custom resource."""
    return {"num_gpus": amount} if resource == "GPU" else {"resources": {resource: amount}}
