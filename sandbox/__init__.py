"""Everything that touches user code: the worker process, the run pipeline and its isolation.

The web process imports only `sandbox.spec`, `sandbox.protocol` and `sandbox.pool` from here;
none of them imports torch or triton or evaluates user code.
"""
