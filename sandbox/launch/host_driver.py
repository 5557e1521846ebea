"""`triton.runtime.driver.active` on a host without a GPU: what Triton's interpreter needs of it.

Nearly every tutorial module starts by asking Triton's driver for the device
(`DEVICE = triton.runtime.driver.active.get_active_torch_device()`), its target, or a GPU's
properties for occupancy arithmetic. Without a GPU, Triton has no active driver and those lines
raise "0 active drivers". Here they answer as the interpreter would need: the torch device is `cpu`,
the target is the GPU the IR tab compiles for by default, and the device properties are that GPU's.
A run whose module asked says so in its notes (`note()`): the numbers are a named GPU's, not this host's.

A module may also derive its device from the target (`torch.device(TARGET.backend)`: 'cuda'), from the
driver's device index (0, which torch reads as cuda:0), or write 'cuda' itself: on a host without
CUDA, `cuda_is_the_cpu()` makes each of those the CPU while the module and its program run.
"""
import contextlib

import torch
import triton
from torch.overrides import TorchFunctionMode
from triton.backends.compiler import GPUTarget

# The stated GPU: an H100 SXM (sm90, the IR's default target), as CUDA's driver describes it.
TARGET = GPUTarget("cuda", 90, 32)
GPU_NAME = "NVIDIA H100 80GB HBM3"
PROPERTIES = {
    "max_shared_mem": 232448,      # bytes of shared memory a block may opt into
    "max_num_regs": 65536,         # 32-bit registers per SM
    "multiprocessor_count": 132,
    "warpSize": 32,
    "sm_clock_rate": 1980000,      # kHz
    "mem_clock_rate": 2619000,     # kHz
    "mem_bus_width": 5120,         # bits
}


class _Utils:
    """`driver.active.utils`: the part of it that Python code asks (the rest loads compiled binaries)."""

    def __init__(self, driver):
        self.driver = driver

    def get_device_properties(self, device=None):
        self.driver.consulted = True
        return dict(PROPERTIES)


class HostDriver:
    """The stand-in driver. `consulted` turns true once the user's code asks it anything."""

    def __init__(self):
        self.consulted = False
        self.utils = _Utils(self)

    def _asked(self, value):
        self.consulted = True
        return value

    def is_active(self):
        return True

    def get_active_torch_device(self):
        return self._asked(torch.device("cpu"))

    def get_current_target(self):
        return self._asked(TARGET)

    def get_current_device(self):
        return self._asked(0)

    def set_current_device(self, device):
        self.consulted = True

    def get_current_stream(self, device=None):
        return self._asked(0)

    def get_device_interface(self):
        return self._asked(torch.cpu)

    def get_device_capability(self, device=None):
        return self._asked((TARGET.arch // 10, TARGET.arch % 10))


def _here(device):
    """`device` as this host has it: a CUDA device (by name, torch.device or index) is the CPU."""
    if isinstance(device, int) and not isinstance(device, bool):
        return torch.device("cpu")
    if isinstance(device, str) and device.split(":")[0] == "cuda" or \
            isinstance(device, torch.device) and device.type == "cuda":
        return torch.device("cpu")
    return device


class _CudaIsTheCpu(TorchFunctionMode):
    """Tensors a program asks for on 'cuda' made on the CPU: factories' `device=`, `Tensor.to(...)`,
    `Tensor.cuda()`."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = _here(kwargs["device"])
        name = getattr(func, "__name__", None)
        if name == "cuda" and args and isinstance(args[0], torch.Tensor):
            return args[0]
        if name == "to" and len(args) > 1:
            args = (args[0], _here(args[1]), *args[2:])
        return func(*args, **kwargs)


def cuda_is_the_cpu():
    """While it is entered, on a host without CUDA, 'cuda' names the CPU (a no-op elsewhere)."""
    return contextlib.nullcontext() if torch.cuda.is_available() else _CudaIsTheCpu()


def _no_driver():
    """True when Triton has no driver of its own to answer (no GPU, or none it can use)."""
    try:
        triton.runtime.driver.active
    except RuntimeError:
        return True
    return isinstance(triton.runtime.driver.active, HostDriver)


def install():
    """Make a HostDriver Triton's active driver where Triton has none (once: a run's every load of its
    module shares it)."""
    if _no_driver() and not isinstance(triton.runtime.driver._active, HostDriver):
        triton.runtime.driver.set_active(HostDriver())


def note():
    """The run's note when its code consulted the stand-in since the last note, else None."""
    driver = triton.runtime.driver._active
    if not isinstance(driver, HostDriver):
        return None
    text = note_of(driver, "This host has no GPU")
    driver.consulted = False  # the next run in this process says so only if it asks too
    return text

@contextlib.contextmanager
def standing_in():
    """A HostDriver as Triton's active driver while a program runs in the interpreter, whatever the
    host has (script mode): the program's device is then `cpu`, where the interpreter's tracer works.
    Yields the driver; its note is the caller's to take before the driver before comes back."""
    before = triton.runtime.driver._active
    driver = HostDriver()
    triton.runtime.driver.set_active(driver)
    try:
        with cuda_is_the_cpu():
            yield driver
    finally:
        triton.runtime.driver._active = before


def note_of(driver, why):
    """The run's note for a HostDriver its code consulted (`why` it stood in), else None."""
    if not driver.consulted:
        return None
    return (f"{why}: triton.runtime.driver.active answered for it, with the torch "
            f"device 'cpu', the target {TARGET.backend} sm{TARGET.arch} and the device properties of an {GPU_NAME} "
            f"({PROPERTIES['multiprocessor_count']} SMs, {PROPERTIES['max_shared_mem'] // 1024} KB shared memory "
            f"per block, {PROPERTIES['max_num_regs']} registers per SM)"
            + ("; and the device 'cuda' the program may name is this host's CPU." if not torch.cuda.is_available() else "."))
