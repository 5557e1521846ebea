"""Attacks through the web side: results and traces of millions of tiny objects, a graded run's plant."""

# A run that makes its own result millions of tiny objects (about 9 MB of `{},`): the run process is
# the run's, so it can make its result anything (here through the last step of the run under way,
# which the module, loaded during the run, replaces); its worker must not parse it, nor the web process.
HUGE_RESULT = """
import sandbox.run.pipeline as _pipeline
_compile_ir = _pipeline.Run.compile_ir
def _huge(self, *args, **kwargs):
    _compile_ir(self, *args, **kwargs)
    self.result['notes'] = [{} for _ in range(3_000_000)]
_pipeline.Run.compile_ir = _huge
"""

LIST_OWN_CACHE = "attempt('cache', lambda: sorted(os.listdir(os.environ['TRITON_CACHE_DIR'])))"

# Python run by a teacher's puzzle in the student's graded run (an input's expression: exec(...)):
# it lists the kernel cache the run was lent and plants an entry in it, named as Triton names one.
GRADED_PLANT = """
import json, os
cache = os.environ['TRITON_CACHE_DIR']
seen = sorted(os.listdir(cache))
os.makedirs(os.path.join(cache, KEY), exist_ok=True)
with open(os.path.join(cache, KEY, 'add_kernel.json'), 'w') as f:
    f.write(json.dumps({'planted': KEY}))
print('GRADED-FINDINGS ' + json.dumps(seen), flush=True)
"""

# A teacher's solution whose trace is made far larger than TRACE_MAX_BYTES (its programs, repeated).
PADDED_SOLUTION_TRACE = """
import sandbox.run.pipeline as _pipeline
_compile_ir = _pipeline.Run.compile_ir
def _padded(self, *args, **kwargs):
    _compile_ir(self, *args, **kwargs)
    trace = self.result.get('trace')
    if trace and len(trace['programs']) < 1000:
        trace['programs'] = trace['programs'] * (12000 // max(1, len(trace['programs'])))
_pipeline.Run.compile_ir = _padded
"""
