"""The host's NVIDIA GPUs, found without CUDA or torch: the web process (which imports neither) counts
them to start one warm worker per GPU, and a worker's jail binds only its own GPU's device node.

A GPU's index is nvidia-smi's: the GPUs in PCI bus order, which is CUDA's order too once
CUDA_DEVICE_ORDER=PCI_BUS_ID (the dispatcher sets it with each worker's CUDA_VISIBLE_DEVICES; CUDA's
default order puts the fastest first). Its device node is /dev/nvidia<minor>, the minor number the
driver gave it, which need not be its index.

Inside a run's jail CUDA counts only the GPUs whose nodes it can open: with only /dev/nvidia1
there, that GPU is CUDA's device 0 and CUDA_VISIBLE_DEVICES=1 names no GPU at all (cuInit answers
CUDA_ERROR_NO_DEVICE). A UUID names the same GPU inside the jail and out, so a jailed run is given
its GPUs by UUID (by_uuid). The driver's /proc entries of the other GPUs (their model, UUID, bus)
are covered in its jail (others_entries).
"""
import os
import re
from dataclasses import dataclass

DRIVER = "/proc/driver/nvidia"
PROC_GPUS = DRIVER + "/gpus"  # one directory per GPU, named by its PCI bus id
GPU_NODE = re.compile(r"nvidia(\d+)")


@dataclass(frozen=True)
class Gpu:
    index: int  # nvidia-smi's, and CUDA's with CUDA_DEVICE_ORDER=PCI_BUS_ID
    minor: int  # its device node: /dev/nvidia<minor>
    name: str
    uuid: str = ""


def _information(path):
    """The driver's `information` file of one GPU: {"Model": ..., "Device Minor": ..., "GPU UUID": ...}."""
    try:
        with open(path) as f:
            return {key.strip(): value.strip() for key, _, value in (line.partition(":") for line in f)}
    except OSError:
        return {}


def host_gpus(proc=PROC_GPUS, dev="/dev"):
    """The GPUs this process can see, by index: from the driver's /proc entries (model, minor, UUID);
    where those are missing, from the /dev/nvidia<N> nodes (taking N as both index and minor)."""
    try:
        buses = sorted(os.listdir(proc))  # "0000:18:00.0": the text order is the bus order
    except OSError:
        buses = []
    gpus = []
    for index, bus in enumerate(buses):  # a GPU's index is its place among all, those a jail covers included
        info = _information(os.path.join(proc, bus, "information"))
        if info.get("Device Minor", "").isdigit():
            gpus.append(Gpu(index, int(info["Device Minor"]), info.get("Model") or "NVIDIA GPU",
                            info.get("GPU UUID", "")))
    if gpus:
        return gpus
    try:
        minors = sorted(int(m.group(1)) for m in map(GPU_NODE.fullmatch, os.listdir(dev)) if m)
    except OSError:
        return []
    return [Gpu(i, minor, "NVIDIA GPU") for i, minor in enumerate(minors)]


def find(gpus, entry):
    """The GPU a CUDA_VISIBLE_DEVICES entry names (an index, or a UUID or its unique prefix), or None
    (a MIG instance, an id this host does not have)."""
    entry = entry.strip()
    if entry.isdigit():
        return next((g for g in gpus if g.index == int(entry)), None)
    matches = [g for g in gpus if entry.startswith("GPU-") and g.uuid.startswith(entry)]
    return matches[0] if len(matches) == 1 else None


def selected(gpus, visible):
    """The GPUs a CUDA_VISIBLE_DEVICES value names, in its order; None where it is unset (all of
    them) or names one that `gpus` cannot place."""
    if visible is None:
        return None
    found = [find(gpus, entry) for entry in visible.split(",") if entry.strip()]
    return None if None in found else found


def by_uuid(gpus, visible):
    """The CUDA_VISIBLE_DEVICES a jailed run gets: the GPUs `visible` names, each by its UUID, in its
    order; `visible` as it is where a GPU cannot be placed or has no known UUID (unset, a MIG instance)."""
    found = selected(gpus, visible)
    if not found or not all(g.uuid for g in found):
        return visible
    return ",".join(g.uuid for g in found)


def others_entries(nodes, driver=DRIVER):
    """The driver's /proc entries of the GPUs a run may not use: gpus/<bus id>/ and (MIG's)
    capabilities/gpu<minor>/ of each GPU whose device node is not among `nodes` (the /dev names the
    run is given: sandbox.jail.isolation.gpu_devices). An entry whose minor cannot be read is
    counted another's: only what is known to be the run's own GPU shows. None without the driver."""
    held = {int(m.group(1)) for m in map(GPU_NODE.fullmatch, nodes) if m}
    try:
        buses = sorted(os.listdir(os.path.join(driver, "gpus")))
    except OSError:
        return []
    hidden = []
    for bus in buses:
        minor = _information(os.path.join(driver, "gpus", bus, "information")).get("Device Minor", "")
        if minor.isdigit() and int(minor) in held:
            continue
        hidden.append(os.path.join(driver, "gpus", bus))
        capabilities = os.path.join(driver, "capabilities", f"gpu{minor}")
        if minor.isdigit() and os.path.isdir(capabilities):
            hidden.append(capabilities)
    return hidden
