"""Who a run belongs to: a random id in the browser's signed session cookie, set when the page
loads and carried by its Socket.IO connection (an API client keeps it as any cookie). Runs of one
owner reuse the kernels that owner compiled, and see nothing another owner compiled."""
import secrets

from flask import session


def current_owner():
    if "owner" not in session:
        session["owner"] = secrets.token_hex(16)
    return session["owner"]
