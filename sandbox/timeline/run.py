"""The timeline run: the kernel launched once more under Proton's intra-kernel instrumentation, its
regions made Proton's scopes (sandbox.timeline.regions), the record decoded (record) into the
result's `timeline` part (part). GPU only: Proton reads the GPU's own clocks. A form run's launch
and a script's shown launch (sandbox.run.script, or replayed alone: sandbox.run.replay) alike."""
import os

import torch
import triton

from sandbox.errors import RunError
from sandbox.launch.kernel import find_kernel, launch_keywords, load_module
from sandbox.timeline import part, record, regions

NO_GPU = ("No timeline: a timeline needs a GPU. Proton's instrumentation reads the GPU's own clocks, and this run "
          "ran in Triton's interpreter, one program after another on the CPU, whose times would be fiction.")


def timeline(spec, scratch, jit_config, grid, args, kernel_ms):
    """The `timeline` part of a launch of `spec`'s kernel with `args` over `grid` (evaluated, or a
    callable of meta), compiled with `jit_config` (a triton.Config: the config that ran). Raises
    RunError (phase "launch") when the regions or the instrumented launch fail."""
    try:
        instrumented = regions.instrument(spec["source"], spec["kernel"])
    except regions.RegionError as e:
        raise RunError("launch", f"No timeline: {e}", type="RegionError", field="source") from None
    path = os.path.join(scratch, "timeline_kernel.py")
    with open(path, "w") as f:
        f.write(instrumented.source)
    kernel = find_kernel(load_module(path, False), spec["kernel"])
    values = {**args, **jit_config.kwargs}
    values.update({name: rule(values) for name, rule in (kernel.heuristics or {}).items()})
    keywords = launch_keywords(values, num_warps=jit_config.num_warps, num_stages=jit_config.num_stages)
    raw, compiled = recorded(lambda: kernel.jit[grid](**keywords), os.path.join(scratch, "timeline"))
    names = scope_names(compiled, scratch)
    by_name = {r.name: r for r in instrumented.regions}
    ordered = [by_name.get(names.get(i), regions.Region(names.get(i, f"scope {i}"), [0, 0], False))
               for i in range(max(names, default=-1) + 1)]
    properties = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())
    return part.build(record.decode(raw), ordered, launched_grid(grid, keywords), compiled.metadata.num_warps,
                      properties["sm_clock_rate"] / 1e6, properties["multiprocessor_count"], kernel_ms)


def timeline_or_note(notes, make):
    """The part `make()` makes (a call of `timeline`), or None with a note in `notes` saying why there
    is none: a launch that cannot be instrumented leaves the rest of its run as it was."""
    try:
        return make()
    except RunError as e:
        notes.append(e.message if e.message.startswith("No timeline") else f"No timeline: {e.message}")
    except Exception as e:
        notes.append(f"No timeline: the instrumented launch failed: {type(e).__name__}: {e}")
    return None


def recorded(launch, name):
    """(Proton's host buffer as bytes, the compiled kernel) of one launch under an instrumentation session."""
    import triton.profiler as proton
    import triton.profiler.language as pl
    if hasattr(pl, "enable_semantic"):
        pl.enable_semantic("triton")  # Proton instruments Gluon kernels only unless told
    hook = proton.hooks.InstrumentationHook
    hook.enable_host_buffer = True
    proton.start(name, backend="instrumentation", data="tree")
    try:
        compiled = launch()
        torch.cuda.synchronize()
        if hook.host_buffer is None:
            raise RunError("launch", "No timeline: Proton recorded nothing for this launch")
        return hook.host_buffer.numpy().tobytes(), compiled
    finally:
        hook.enable_host_buffer = False
        proton.finalize()


def scope_names(compiled, scratch):
    """{scope id: name} as Proton numbered the kernel's scopes (from its TTGIR, as its hook reads them)."""
    from triton._C.libtriton import ir, nvidia, proton as proton_ir
    path = os.path.join(scratch, "timeline.ttgir")
    with open(path, "w") as f:
        f.write(compiled.asm["ttgir"])
    context = ir.context()
    ir.load_dialects(context)
    nvidia.load_dialects(context)
    proton_ir.load_dialects(context)
    module = ir.parse_mlir_module(path, context)
    module.context = context
    pairs = proton_ir.get_scope_id_names(module)
    pairs = pairs.items() if isinstance(pairs, dict) else pairs
    return {int(a) if not isinstance(a, str) else int(b): b if isinstance(b, str) else a for a, b in pairs}


def launched_grid(grid, keywords):
    grid = grid(keywords) if callable(grid) else grid
    return list(grid) + [1] * (3 - len(grid))
