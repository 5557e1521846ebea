# %% The playground's own build and check, as a run does them (sandbox/run/build.py, sandbox/run/check.py)
class RunError(Exception):
    """The error a run reports, here a plain exception naming its phase."""

    def __init__(self, phase, message, **fields):
        super().__init__(f"{phase}: {message}")


