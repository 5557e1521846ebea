"""Everything that touches user code, in four parts: the worker (worker/) forks jailed (jail/) run
processes that run a spec (run/), trace it (trace/) or grade it (grading/).

The contracts both sides share live here at the top (spec, result, errors, protocol, settings,
gpus, launch_form): pure Python, none imports torch or triton or evaluates user code, so the web
process (app/) imports only these.
"""
