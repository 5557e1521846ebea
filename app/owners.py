"""Who a run belongs to, and where it comes from.

An owner is a random id in the browser's signed session cookie, set when the page loads and carried
by its Socket.IO connection (an API client keeps it as any cookie). Runs of one owner reuse the
kernels that owner compiled, and see nothing another owner compiled. A worker never sees the id:
it sees key(owner), a digest of it.

The server's own work (a puzzle's solution run) has owners of its own, ServerWork, whose keys lie
outside the digests' space: a key of a session is 32 hex digits, a key of the server's work starts
with "server-". No cookie, however it is signed, names the server's work, and the server's work
waits in the queue under its own per-owner cap like anyone's.

Fairness by where a client connects from: address_of(environ) is the client's address (the
forwarded one behind TRUSTED_PROXY_HOPS proxies: app.web.security applies werkzeug's ProxyFix), an
IPv6 address by its /64, the block one host is given. A client that drops its cookie is a new owner
at every request, but not a new address.
"""
import hashlib
import ipaddress
import re
import secrets
from dataclasses import dataclass

from flask import request, session

OWNER_ID = re.compile(r"^[0-9a-f]{32}$")
SERVER_PREFIX = "server-"


@dataclass(frozen=True)
class ServerWork:
    """An owner for work the server does itself: `name` says which ("puzzle-solutions")."""
    name: str

    @property
    def key(self):
        return SERVER_PREFIX + self.name


PUZZLE_SOLUTIONS = ServerWork("puzzle-solutions")


def current_owner():
    """This session's owner id, made if it has none (or one it could not have been given)."""
    owner = session.get("owner")
    if not (isinstance(owner, str) and OWNER_ID.match(owner)):
        owner = session["owner"] = secrets.token_hex(16)
    return owner


def key(owner):
    """What a worker and the queue know an owner by: the digest of a session's id (32 hex digits),
    or a ServerWork's own key ("server-…"), which no digest can be."""
    if isinstance(owner, ServerWork):
        return owner.key
    return hashlib.sha256(str(owner).encode()).hexdigest()[:32]


def address_key(address):
    """A client address as the fairness limits count it: an IPv4 address as it is, an IPv6 one by
    its /64 (an IPv4-mapped one as its IPv4 address); anything else (a unix socket, none) as "local"."""
    try:
        parsed = ipaddress.ip_address((address or "").strip())
    except ValueError:
        return "local" if not address else str(address)[:64]
    if parsed.version == 6:
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


def address_of(environ):
    return address_key(environ.get("REMOTE_ADDR"))


def current_address():
    """The address key of the client of this request (or Socket.IO event)."""
    return address_key(request.remote_addr)
