"""The worker: a warm process (`python -m sandbox.worker`) that forks a fresh jailed run process per
job, lends each owner's compiled kernels and warms the gallery. May import jail/, launch/, trace/, run/ and grading/."""
