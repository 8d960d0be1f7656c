"""This process's CUDA device, as far as an already imported torch sees it: whether there is one, and what it is.

Looks only at sys.modules: a run that never imported torch has no CUDA memory
to measure, and importing it here would cost seconds and RAM.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

from gpu_budget.measure.host_memory import host_memory


def cuda_torch() -> ModuleType | None:
    """The imported torch module where it sees a CUDA device; None otherwise (never imported, or no device)."""
    torch = sys.modules.get("torch")
    return torch if torch is not None and torch.cuda.is_available() else None


def cuda_available() -> bool:
    """True when the (already imported) torch sees a CUDA device."""
    return cuda_torch() is not None


@dataclass(frozen=True)
class DeviceInfo:
    """What a baseline's fingerprint and hardware key need to know about this process's device (all None, and no
    GPUs, without CUDA), and the host memory a measured child can hold (host_memory.py: not in the fingerprint)."""

    cuda: bool
    cuda_version: str | None = None
    driver: str | None = None  # NVML's driver version: optional in the fingerprint, None where NVML is absent
    gpu_name: str | None = None
    gpu_memory: int | None = None  # bytes
    gpus: int = 0
    visible: str | None = None  # without CUDA: CUDA_VISIBLE_DEVICES as the probe child had it (None: unset)
    host_memory: int | None = None  # bytes; None where not read

    @classmethod
    def read(cls) -> DeviceInfo:
        torch = cuda_torch()
        if torch is None:
            return cls(cuda=False, visible=os.environ.get("CUDA_VISIBLE_DEVICES"), host_memory=host_memory())
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        cuda_version, gpus = torch.version.cuda, torch.cuda.device_count()
        return cls(cuda=True, cuda_version=cuda_version, driver=_driver_version(), gpu_name=props.name,
                   gpu_memory=int(props.total_memory), gpus=gpus, host_memory=host_memory())

    def to_json(self) -> dict[str, str | int | bool | None]:
        """As it crosses from the measuring child to the parent (events.DeviceSeen)."""
        return {"cuda": self.cuda, "cuda_version": self.cuda_version, "driver": self.driver, "gpu_name": self.gpu_name,
                "gpu_memory": self.gpu_memory, "gpus": self.gpus,
                **({"visible": self.visible} if self.visible is not None else {}),
                **({"host_memory": self.host_memory} if self.host_memory is not None else {})}

    @classmethod
    def from_json(cls, data: Mapping[str, str | int | bool | None]) -> DeviceInfo:
        """As the probe reports it (a missing field is unknown; no GPUs where none is said)."""
        return cls(cuda=bool(data.get("cuda")), cuda_version=data.get("cuda_version"), driver=data.get("driver"),
                   gpu_name=data.get("gpu_name"), gpu_memory=data.get("gpu_memory"), gpus=data.get("gpus") or 0,
                   visible=data.get("visible"), host_memory=data.get("host_memory"))


def _driver_version() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlSystemGetDriverVersion()
    except Exception:  # noqa: BLE001  the driver version is optional in the fingerprint; NVML may be absent
        return None


def device_info() -> dict[str, str | int | bool | None]:
    """DeviceInfo.read() as JSON: what the measuring child sends the parent about its device."""
    return DeviceInfo.read().to_json()
