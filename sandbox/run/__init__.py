"""One run inside a run process: a form run's one launch (pipeline), its sweeps (sweep), and whole
programs (script mode: script, capture, script_gpu), each launch made by one pass (launch_pass),
checked (check) and timed (bench). Launches with sandbox.launch, traces with sandbox.trace, records
timelines with sandbox.timeline; never imports worker/ or jail/."""
