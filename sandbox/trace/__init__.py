"""What a launch touched: the trace record (record), taken by Triton's interpreter (interpreter,
patches, libdevice) or on the GPU by an instrumented build (gpu, instrument, probes, provenance),
and the stepper. Makes its launches with sandbox.launch; never imports run/, worker/ or jail/."""
