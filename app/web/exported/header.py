"""{title}

Exported from the Triton Playground. Runs the kernel on a CUDA GPU when there is one, otherwise
in Triton's interpreter on the CPU (TRITON_INTERPRET=1 forces the interpreter). Builds, checks
and times as a run does (its code is below), prints OK or the mismatch, and on a GPU times the
kernel and the reference.
"""
import math
import os
import re
import sys

import torch

# Triton picks the interpreter when it is imported, so decide before `import triton`.
{choose_interpreter}
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "cuda"

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

