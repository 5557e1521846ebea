"""What tests share besides fixtures, each module for what it serves; tests import from them, never
from conftest:

- kernels: the vector add most tests run (its source, its spec) and a run that never ends
- apps: a real app with its workers, waiting for them, serving it over HTTP
- browser: chromium's launch settings and the pages a test opens in it
- harness_pages: the front-end's modules on standalone pages (no app), with results_by_hand
- attacks (a package: the prelude, the attacks by topic), hostile, hostile_targets: the hostile
  corpus's attack sources, its checker and its targets
- trace_corpus: kernels both tracers must see alike
- postgres: a real PostgreSQL server made from scratch

Here: the project's root, whether this host has a GPU and whether its Triton has block pointers."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def has_block_pointers():
    """Whether this Triton has block pointers (tl.make_block_ptr, tl.advance): Triton 3.9 removed them
    for tensor descriptors, from its interpreter as from its compiler."""
    from triton.runtime.interpreter import InterpreterBuilder
    return hasattr(InterpreterBuilder, "create_make_block_ptr")


def needs_block_pointers():
    """The mark of a test, or a parameter, that runs only on a Triton with block pointers (3.7, the GPU
    host's 3.6)."""
    import pytest
    return pytest.mark.skipif(not has_block_pointers(), reason="this Triton has no block pointers (3.9 removed them)")
