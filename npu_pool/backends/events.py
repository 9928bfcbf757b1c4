"""Device-event timing shared by the accelerator backends (cuda, npu).

The event, stream and synchronise functions are captured once, when a backend selects its
device, before any candidate code runs in the process: a candidate that later patches
`torch.cuda.Event.elapsed_time` or `torch.npu.synchronize` does not change what the timer
calls.
"""

from __future__ import annotations

import os
import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from npu_pool.backends.base import Backend, DevicePeaks, Timer

# Bound at import, before any candidate code runs (as the CPU backend's clock).
_clock_ns = time.perf_counter_ns


@dataclass(frozen=True)
class EventApi:
    """One device module's event and stream entry points (torch.cuda or torch.npu)."""

    event_class: Any
    record: Callable[[Any, Any], Any]  # record(event, stream)
    elapsed_time: Callable[[Any, Any], float]  # elapsed_time(start, end) in ms
    wait_event: Callable[[Any], Any]  # event.synchronize(): the host waits for this event only
    current_stream: Callable[[str], Any]
    synchronize: Callable[[str], Any]  # the whole device: every stream

    @classmethod
    def capture(cls, device_module: Any, event_base: Any = None) -> EventApi:
        """From `torch.cuda`/`torch.npu`; methods come from `event_base` when given (a C base
        class, which Python code cannot patch), else from the module's Event class."""
        base = event_base or device_module.Event
        return cls(event_class=device_module.Event, record=base.record, elapsed_time=base.elapsed_time,
                   wait_event=base.synchronize, current_stream=device_module.current_stream,
                   synchronize=device_module.synchronize)


class EventTimer(Timer):
    """Events around the region on the device's current stream, with the whole device
    synchronised around it: before the start event (no earlier work on any stream runs into
    the region) and after the end event. Right after the end event has completed, the host
    waits for the whole device and times that wait: work the region left running on another
    stream (which the current stream's events cannot see) shows as `lingering_ms`."""

    def __init__(self, api: EventApi, device: str):
        self._api = api
        self._device = device
        self._start = api.event_class(enable_timing=True)
        self._stop = api.event_class(enable_timing=True)
        self._lingering_ns = 0

    def start(self) -> None:
        self._api.synchronize(self._device)
        self._api.record(self._start, self._api.current_stream(self._device))

    def stop(self) -> None:
        self._api.record(self._stop, self._api.current_stream(self._device))
        self._api.wait_event(self._stop)  # the current stream has reached the end of the region
        ended = _clock_ns()
        self._api.synchronize(self._device)  # every stream: returns at once when the device is idle
        self._lingering_ns = _clock_ns() - ended

    def elapsed_ms(self) -> float:
        self._api.synchronize(self._device)
        return float(self._api.elapsed_time(self._start, self._stop))

    def lingering_ms(self) -> float:
        return self._lingering_ns / 1e6


def best_ms(make_timer: Callable[[], Timer], fn: Callable[[], Any], repeats: int = 10) -> float:
    """The fastest of `repeats` timed calls of `fn`, after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        timer = make_timer()
        timer.start()
        fn()
        timer.stop()
        best = min(best, timer.elapsed_ms())
    return best


def measure_peaks(torch: Any, device: str, make_timer: Callable[[], Timer], matmul_size: int, label: str) -> DevicePeaks:
    """Sustained bandwidth (a 256 MiB float32 copy) and float32 matmul throughput."""
    n = 64 * 2**20
    a = torch.rand(n, device=device)
    b = torch.empty_like(a)
    copy_ms = best_ms(make_timer, lambda: b.copy_(a))
    m = matmul_size
    x = torch.rand(m, m, device=device)
    y = torch.rand(m, m, device=device)
    mm_ms = best_ms(make_timer, lambda: torch.mm(x, y))
    return DevicePeaks(gbps=2 * 4 * n / (copy_ms / 1e3) / 1e9, gflops=2 * m**3 / (mm_ms / 1e3) / 1e9,
                       method=f"{label} events, best of 10: 256 MiB float32 copy; {m}^3 float32 matmul")


def visible_device_problem(device_module: Any, index: int, none_visible: str, env_var: str, label: str) -> str | None:
    """Why device `index` of `device_module` (torch.cuda, torch.npu) cannot be used: none is
    visible (naming `env_var`'s value) or too few are; None when it can."""
    if not device_module.is_available() or device_module.device_count() == 0:
        visible = os.environ.get(env_var)
        return f"{none_visible} ({env_var}={visible if visible is not None else 'unset'})"
    if index >= device_module.device_count():
        return f"{label} {index} requested but only {device_module.device_count()} visible"
    return None


class EventBackend(Backend):
    """An accelerator backend timed with device events: subclasses set `self._api` in
    `select()`, which makes their device current."""

    _api: EventApi | None

    @abstractmethod
    def select(self) -> Any:
        """Make this backend's device current (once), capturing `self._api`."""

    def synchronize(self) -> None:
        self.select()
        self._api.synchronize(self.device)

    def timer(self) -> Timer:
        self.select()
        return EventTimer(self._api, self.device)
