"""The npu-twin backend's timing: modelled, never measured. The timer reports the twin's
modelled cost of the launches in its region; a region without one (the eager reference) is
modelled on the same SoC as one kernel per aten operator; traffic the twin's counters cannot
see (raw __gm__ pointer accesses) is charged as scalar global-memory accesses."""

from __future__ import annotations

from typing import Any

from npu_pool.backends.base import Timer

_FREE_OPS = {"view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "as_strided", "detach",
             "alias", "slice", "select", "unsqueeze", "squeeze", "empty", "empty_like", "empty_strided",
             "lift_fresh", "_to_copy_noop", "unbind", "split", "chunk", "narrow", "contiguous"}


class _EagerCostMode:
    """Counts what eager PyTorch would move and compute on an NPU: each aten operator is one
    kernel reading its tensor inputs and writing its outputs through global memory."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import flop_registry

        ops: list[tuple[int, int]] = []
        self.ops = ops

        def nbytes(values: Any) -> int:
            import torch
            from torch.utils._pytree import tree_leaves

            return sum(t.numel() * t.element_size() for t in tree_leaves(values) if isinstance(t, torch.Tensor))

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                kwargs = kwargs or {}
                out = func(*args, **kwargs)
                packet = func.overloadpacket
                if packet.__name__.rstrip("_") not in _FREE_OPS:
                    flops = 0
                    if packet in flop_registry:
                        try:
                            flops = int(flop_registry[packet](*args, **kwargs, out_val=out))
                        except Exception:  # a counter that does not fit these arguments: bytes alone
                            flops = 0
                    ops.append((nbytes((args, kwargs)) + nbytes(out), flops))
                return out

        self.mode = Mode()

    def modelled_us(self, soc: dict[str, Any]) -> float:
        bytes_per_us = soc["gm_gbps"] * 1e3
        flops_per_us = peak_gflops(soc) * 1e3
        return sum(soc["launch_us"] + max(b / bytes_per_us, f / flops_per_us) for b, f in self.ops)


def peak_gflops(soc: dict[str, Any]) -> float:
    """The modelled SoC's float32 peak: the cube's multiply-accumulates (2 FLOPs each) over
    all cores, or where it has no float cube, 64 float lanes of the vector unit per cycle."""
    cube = soc.get("cube_macs_per_cycle_32") or 0
    per_cycle = 2 * cube if cube else 64
    return per_cycle * soc["clock_ghz"] * soc["ai_cores"]


class ModelledTimer(Timer):
    """The twin's modelled cost of the launches inside the region; a region with no twin
    launch (the eager reference) is modelled per aten operator on the same SoC."""

    def __init__(self, backend: Any) -> None:  # an NpuTwinBackend: launches, modelled_us_total, soc_params()
        self.backend = backend
        self._launches = 0
        self._us = 0.0
        self._eager: _EagerCostMode | None = None
        self._elapsed_ms = 0.0

    def start(self) -> None:
        self._launches, self._us = self.backend.launches, self.backend.modelled_us_total
        self._eager = _EagerCostMode()
        self._eager.mode.__enter__()

    def stop(self) -> None:
        assert self._eager is not None
        self._eager.mode.__exit__(None, None, None)
        if self.backend.launches > self._launches:
            self._elapsed_ms = (self.backend.modelled_us_total - self._us) / 1e3
        else:
            self._elapsed_ms = self._eager.modelled_us(self.backend.soc_params()) / 1e3

    def elapsed_ms(self) -> float:
        return self._elapsed_ms


def charge_unseen_traffic(profile: dict[str, Any], needed_bytes: int, block_dim: int) -> None:
    """Raw `__gm__` pointer accesses bypass the twin's API, so its counters miss them; on a device
    they are scalar accesses to global memory, the slowest kind. Where the launch moved fewer
    bytes through the API than its tensors hold, the rest is charged at the twin's scalar
    global-memory cost per 4 bytes, spread over the cores the blocks ran on (in `profile`)."""
    if not profile:
        return
    moved = sum(profile.get("bytes", {}).values()) + 4 * int(profile.get("gm_scalar_accesses", 0))
    unseen = needed_bytes - moved
    if unseen <= 0:
        return
    soc = profile.get("soc", {})
    cores = max(1, min(block_dim, int(profile.get("vector_cores") or soc.get("ai_cores") or 1)))
    charge = unseen / 4 * float(soc.get("gm_scalar_us", 0.1)) / cores
    profile["modelled_us"] = float(profile.get("modelled_us", 0.0)) + charge
    profile["unseen_gm_bytes"] = unseen
    profile.setdefault("notes", []).append(
        f"{unseen} bytes of the tensors were not moved by DataCopy or GlobalTensor: charged as scalar "
        f"global-memory accesses (+{charge:.4g} us)")
