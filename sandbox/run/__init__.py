"""One run inside a run process: build the launch from the spec, launch it, check, time and show
its IR; sweeps and whole programs (script mode). Traces with trace/; never imports worker/ or jail/."""
