"""Everything that touches user code: the worker (worker/) forks jailed (jail/) run processes that
run a spec (run/), trace it (trace/) or grade it (grading/), each making its launches with launch/
(the user's kernel loaded, a launch built, launched and compiled). Each part imports only the parts
below it (tests/test_import_rules.py): launch/ ← trace/ ← run/ ← grading/ ← worker/, and jail/.

The contracts both sides share live here at the top (spec, result, errors, protocol, settings,
gpus, launch_form): pure Python, none imports torch or triton or evaluates user code, so the web
process (app/) imports only these.
"""
