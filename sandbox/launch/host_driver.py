"""`triton.runtime.driver.active` on a host without a GPU: what Triton's interpreter needs of it.

Nearly every tutorial module starts by asking Triton's driver for the device
(`DEVICE = triton.runtime.driver.active.get_active_torch_device()`), its target, or a GPU's
properties for occupancy arithmetic. Without a GPU, Triton has no active driver and those lines
raise "0 active drivers". Here they answer as the interpreter would need: the torch device is `cpu`,
the target is the GPU the IR tab compiles for by default, and the device properties are that GPU's.
A run whose module asked says so in its notes (`note()`): the numbers are a named GPU's, not this host's.
"""
import contextlib

import torch
import triton
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
            f"per block, {PROPERTIES['max_num_regs']} registers per SM).")
