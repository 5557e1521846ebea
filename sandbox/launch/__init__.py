"""A launch of the user's kernel, below run/, trace/ and grading/: their module loaded and the kernel
unwrapped (kernel), Triton's driver stood in for on a host without a GPU (host_driver), a launch
built from a spec (build), launched and compiled ahead (launcher), compiled to its IR (ir, its
source lines: ir_lines). Imports only the contracts at sandbox/'s top; never run/, trace/,
grading/, worker/ or jail/."""
