"""Devices: what this machine has, what each node of a Ray cluster offers, one slot per device.

A device slot is where one verifier and one profiler actor live: one NPU (Ray resource
`NPU`, for which Ray sets ASCEND_RT_VISIBLE_DEVICES), one CUDA GPU (`GPU`), or, on a node
without accelerators, a group of CPU cores. Local discovery is lazy: torch_npu is imported
only when the npu backend says it can run, torch.cuda only when asked. `--fake-devices npu:4`
declares NPUs that do not exist, so the pinning path runs on a CPU-only machine (the
actors then evaluate with the cpu backend).
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

DeviceKind = Literal["npu", "cuda", "cpu"]
RAY_RESOURCE: dict[str, str] = {"npu": "NPU", "cuda": "GPU", "cpu": "CPU"}
_FAKE_SPEC = re.compile(r"^\s*(npu|cuda|gpu)\s*:\s*(\d+)\s*$", re.IGNORECASE)


class FakeDevices(BaseModel):
    """Accelerators declared to Ray that are not there (`npu:4`): pinning is real, kernels run on the CPU."""

    kind: DeviceKind
    count: int = Field(ge=1)

    @classmethod
    def parse(cls, spec: str) -> FakeDevices:
        match = _FAKE_SPEC.match(spec)
        if match is None or int(match.group(2)) < 1:
            raise ValueError(f"fake devices want KIND:COUNT with KIND npu or cuda and COUNT >= 1, got {spec!r}")
        kind = "cuda" if match.group(1).lower() in ("cuda", "gpu") else "npu"
        return cls(kind=kind, count=int(match.group(2)))

    def ray_init_kwargs(self) -> dict[str, Any]:
        """What ray.init needs to declare them on a local cluster."""
        return {"num_gpus": self.count} if self.kind == "cuda" else {"resources": {"NPU": self.count}}


class LocalDevices(BaseModel):
    """Accelerators this process can see, and its CPU count."""

    npu: int = 0
    cuda: int = 0
    cpu: int = 1
    notes: list[str] = Field(default_factory=list, description="why an accelerator kind is absent")


def local_devices() -> LocalDevices:
    """Count NPUs (through torch_npu, only where the npu backend is available), CUDA GPUs and CPUs."""
    from npu_pool.backends import backend_status

    found = LocalDevices(cpu=os.cpu_count() or 1)
    available, why = backend_status("npu")
    if available:
        import torch
        import torch_npu  # noqa: F401 - registers torch.npu; present wherever the npu backend is available

        found.npu = int(torch.npu.device_count())  # type: ignore[attr-defined]
    else:
        found.notes.append(f"npu: {why}")
    available, why = backend_status("cuda")
    if available:
        import torch

        found.cuda = int(torch.cuda.device_count())
    else:
        found.notes.append(f"cuda: {why}")
    return found


class NodeDevices(BaseModel):
    """One alive node of the cluster and the resources it declares."""

    node_id: str
    node_ip: str
    is_head: bool = False
    npu: int = 0
    gpu: int = 0
    cpu: float = 0.0


def cluster_nodes() -> list[NodeDevices]:
    """The alive nodes of the connected Ray cluster (head first, then by address and id)."""
    import ray

    nodes = []
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        res = node.get("Resources", {})
        nodes.append(NodeDevices(node_id=node["NodeID"], node_ip=node.get("NodeManagerAddress", ""),
                                 is_head="node:__internal_head__" in res, npu=int(res.get("NPU", 0)),
                                 gpu=int(res.get("GPU", 0)), cpu=float(res.get("CPU", 0))))
    return sorted(nodes, key=lambda n: (not n.is_head, n.node_ip, n.node_id))


def device_kind(backend: str, nodes: list[NodeDevices]) -> DeviceKind:
    """Which device kind the pools pin to: the backend's, or for `auto` the best the cluster has."""
    if backend in ("npu", "cuda", "cpu"):
        return backend  # type: ignore[return-value]
    if backend == "npu-twin":
        return "cpu"  # the Ascend C twin runs kernels on CPU cores
    if any(n.npu for n in nodes):
        return "npu"
    if any(n.gpu for n in nodes):
        return "cuda"
    return "cpu"


# Backends whose kernels run on CPU cores although they model another device (the Ascend C twin).
CPU_HOSTED_BACKENDS = ("npu-twin",)


def evaluating_backend(kind: DeviceKind, configured: str, fake: bool) -> str:
    """The harness backend a device slot evaluates with: its device's; on CPU slots and fake
    devices the cpu backend, or the configured one where that runs on the CPU (npu-twin)."""
    if fake or kind == "cpu":
        return configured if configured in CPU_HOSTED_BACKENDS else "cpu"
    return kind


class SlotPlan(BaseModel):
    """One device slot to create: its node and the Ray resources its placement bundle reserves."""

    kind: DeviceKind
    node_id: str
    node_ip: str
    ordinal: int = Field(description="slot number on its node (the device index for CPU slots)")
    bundle: dict[str, float]


def plan_slots(nodes: list[NodeDevices], kind: DeviceKind, cpus_per_slot: float = 1.0,
               max_devices: int | None = None) -> list[SlotPlan]:
    """One slot per NPU / GPU of every node, or per `cpus_per_slot` CPUs; at most `max_devices`,
    taken round-robin across nodes so that a cap still spreads the work."""
    per_node: list[list[SlotPlan]] = []
    for node in nodes:
        if kind == "cpu":
            count = max(1, int(node.cpu // cpus_per_slot)) if node.cpu > 0 else 0
            bundle = {"CPU": float(min(cpus_per_slot, node.cpu))}
        else:
            count = node.npu if kind == "npu" else node.gpu
            bundle = {RAY_RESOURCE[kind]: 1.0}
        per_node.append([SlotPlan(kind=kind, node_id=node.node_id, node_ip=node.node_ip, ordinal=i, bundle=bundle)
                         for i in range(count)])
    slots: list[SlotPlan] = []
    for depth in range(max((len(p) for p in per_node), default=0)):
        slots += [p[depth] for p in per_node if depth < len(p)]
    return slots[:max_devices] if max_devices else slots
