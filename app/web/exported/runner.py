# %% Run, check, time
def build_args(scope):
    """The arguments, evaluated in the kernel's parameter order, as the playground does."""
    args, scope = {}, dict(scope)
    for name, value in SPEC["args"].items():
        if isinstance(value, str):
            value = evaluate(value, scope, f"argument '{name}'", f"args.{name}")
        args[name] = scope[name] = value
    return args, scope


def launch(kernel, grid, args):
    autotuned = isinstance(kernel, triton.runtime.autotuner.Autotuner)
    options = SPEC["options"]
    tuning = {} if autotuned else {"num_warps": options["num_warps"], "num_stages": options["num_stages"]}
    kernel[grid](**args, **tuning)


def clones(tensors):
    return {name: tensor.clone() for name, tensor in tensors.items()}


def references(namespace, before):
    names = {**namespace, **clones(before)}
    return {name: torch.as_tensor(evaluate(expr, names, f"reference for '{name}'", f"reference.{name}", "check"))
            for name, expr in SPEC["reference"].items()}


def report(verdict):
    for name, output in verdict["outputs"].items():
        if output["ok"]:
            print(f"OK: {name} matches the reference (atol={output['atol']}, rtol={output['rtol']})")
            continue
        print(f"MISMATCH in {name}: {output['mismatched']} of {output['numel']} elements differ "
              f"(max abs error {output['max_abs_err']:.3g}, max rel error {output['max_rel_err']:.3g})")
        if output["unwritten"]:
            print(f"  {output['unwritten']} element(s) of {name} were never written")
    print("OK" if verdict["ok"] else "MISMATCH: the kernel's outputs differ from the reference")


def show_written(before, after, poisoned):
    """Without a reference to check against: what the launch wrote, tensor by tensor."""
    wrote = False
    for name, tensor in after.items():
        if name in poisoned:
            written = ~unwritten_mask(tensor, True)
        else:
            written = tensor != before[name]
            if tensor.dtype.is_floating_point:
                written &= ~(tensor.isnan() & before[name].isnan())
        if written.any():
            wrote = True
            print(f"{name}: the kernel wrote {int(written.sum())} of {tensor.numel()} elements")
            print(tensor)
    if not wrote:
        print("The kernel wrote no element of any input.")


def bench(kernel, grid, args, namespace, before, scope):
    kernel_ms = triton.testing.do_bench(lambda: launch(kernel, grid, args), return_mode="median")
    line = f"kernel: {kernel_ms:.4f} ms"
    if SPEC["reference"]:
        reference_ms = triton.testing.do_bench(lambda: references(namespace, before), return_mode="median")
        line += f"  reference: {reference_ms:.4f} ms  speedup: {reference_ms / kernel_ms:.2f}x"
    if SPEC["options"]["flops"]:
        flops = evaluate(SPEC["options"]["flops"], dict(scope), "options.flops", "options.flops")
        line += f"  {flops / kernel_ms / 1e9:.2f} TFLOP/s"
    print(line)


def main():
    kernel = globals()[KERNEL]
    # What the spec's expressions see, as in a run: torch, triton, tl, math and the kernel's module.
    namespace = {name: value for name, value in globals().items() if not name.startswith("_")}
    inputs, poisoned = build_inputs(SPEC, namespace, DEVICE)
    before = clones(inputs)
    with torch.device(DEVICE):  # a tensor made in an argument expression goes where the inputs are
        args, scope = build_args({**namespace, **inputs})
    grid = build_grid(SPEC, args, scope)
    print(f"{KERNEL}: grid {grid} on {'the Triton interpreter (CPU)' if INTERPRET else torch.cuda.get_device_name()}")
    launch(kernel, grid, args)
    ok = True
    if SPEC["options"]["check"] and SPEC["reference"]:
        expected = references(namespace, before)
        verdict = compare({name: inputs[name] for name in expected}, expected, poisoned,
                          SPEC["options"]["atol"], SPEC["options"]["rtol"])
        report(verdict)
        ok = verdict["ok"]
    else:
        show_written(before, inputs, poisoned)
    if SPEC["options"]["bench"] and not INTERPRET:
        bench(kernel, grid, args, namespace, before, scope)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
