"""The server's settings. Their one definition is sandbox.settings, which the workers read too (the
sandbox never imports the web app)."""
from sandbox.settings import SETTINGS, Setting, from_environment  # noqa: F401
