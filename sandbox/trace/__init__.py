"""What a launch touched: the trace record (record), taken by Triton's interpreter (interpreter,
patches, libdevice) or on the GPU by an instrumented build (gpu, probes, provenance), and the
stepper. Makes its launches with run.kernel and run.build; never imports worker/ or jail/."""
