"""What a launch touched: the trace record (record), taken by Triton's interpreter (interpreter,
patches) or on the GPU by an instrumented build (gpu, probes, provenance), and the stepper."""
