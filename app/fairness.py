"""Fairness between clients, by address (app.owners.address_of): what one client may take of the
server, whatever its cookies and however many connections it opens.

  WriteLimiter          new rows in the database (snippets, puzzles): WRITES_PER_MINUTE per address,
                        a token bucket (a burst of that many, then one every 60/N s); the same
                        buckets count joins of classes and failed look-ups of class codes
                        (app.course.class_api)
  limit_connections     Socket.IO connections: CONNECTIONS_PER_ADDRESS per address, counted at
                        Engine.IO's handshake (before any namespace, event or session), so that a
                        client opening hundreds holds no more than its share of CONNECTIONS; one
                        abandoned after its handshake gives its place up when the address needs it

Runs waiting are bounded per address in the queue itself (QUEUE_PER_ADDRESS: app.dispatch.jobs).
Counts are this web process's: behind a load balancer, sticky by address, a client's requests
reach one process.
"""
import collections
import math
import threading
import time
import urllib.parse

from flask import current_app

from app import db
from app.owners import address_of, current_address
from sandbox.errors import Refused


class WriteLimiter:
    """A token bucket per address: `per_minute` writes at once, then one every 60/per_minute s.
    At most `max_addresses` buckets are kept; the least recently used full one goes first."""

    def __init__(self, per_minute, max_addresses=65536, clock=time.monotonic):
        self.rate, self.capacity = per_minute / 60.0, float(per_minute)
        self.buckets, self.lock, self.clock, self.max_addresses = collections.OrderedDict(), threading.Lock(), clock, max_addresses

    def due(self, address):
        """The seconds until `address` may spend one (0: now), spending nothing."""
        if self.capacity <= 0:
            return 0.0
        with self.lock:
            tokens, then = self.buckets.get(address, (self.capacity, self.clock()))
            tokens = min(self.capacity, tokens + (self.clock() - then) * self.rate)
            return 0.0 if tokens >= 1 else (1 - tokens) / self.rate

    def take(self, address):
        """Spend one write of `address`: 0 if it may write now, else the seconds until it may."""
        if self.capacity <= 0:
            return 0.0
        with self.lock:
            now = self.clock()
            tokens, then = self.buckets.pop(address, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - then) * self.rate)
            wait_s = 0.0
            if tokens >= 1:
                tokens -= 1
            else:
                wait_s = (1 - tokens) / self.rate
            self.buckets[address] = (tokens, now)
            while len(self.buckets) > self.max_addresses:
                self.buckets.popitem(last=False)
            return wait_s


class RateLimited(Refused):
    """A client address past one of its rates (429, with Retry-After): `message` says which."""

    status, phase = 429, "limit"

    def __init__(self, message, wait_s):
        retry_after = max(1, math.ceil(wait_s))
        super().__init__(f"{message}; try again in {retry_after} s", retry_after=retry_after)


class TooManyWrites(RateLimited):
    """The address stored WRITES_PER_MINUTE new snippets and puzzles in the last minute (429, with Retry-After)."""

    def __init__(self, wait_s, per_minute):
        super().__init__(f"this address has stored {per_minute} new snippets or puzzles in the last minute "
                         f"(WRITES_PER_MINUTE)", wait_s)


# A polling client asks again as soon as each answer comes (its GET waits up to the ping interval):
# one of an address at its limit that has had no request under way for this long has been
# abandoned (a handshake and nothing after it), and is closed to make room.
ABANDONED_S = 5.0


def limit_connections(server, per_address):
    """Refuse an Engine.IO connection beyond `per_address` open ones from one address (its handshake
    answers 401 and nothing else of it exists); a closed one frees its place, and so does one that
    was abandoned (no request under way for ABANDONED_S: a socket's request lasts as long as it)
    when its address has no other place left."""
    eio = server.eio
    connect, disconnect, handle = eio.handlers.get("connect"), eio.handlers.get("disconnect"), eio.handle_request
    counts, where, lock = collections.Counter(), {}, threading.Lock()
    under_way, last_seen = collections.Counter(), {}  # by sid: its requests being answered, when the last ended

    def release(sid):
        with lock:
            address = where.pop(sid, None)
            last_seen.pop(sid, None)
            under_way.pop(sid, None)
            if address is not None:
                counts[address] -= 1
                if counts[address] <= 0:
                    del counts[address]

    def abandoned(address):
        now = time.monotonic()
        with lock:
            return [sid for sid, at in where.items() if at == address and not under_way[sid]
                    and now - last_seen.get(sid, now) > ABANDONED_S]

    def take_place(sid, address):
        with lock:
            if per_address and counts[address] >= per_address:
                return False
            counts[address] += 1
            where[sid], last_seen[sid] = address, time.monotonic()
            return True

    def on_connect(sid, environ, *args):
        address = address_of(environ)
        if not take_place(sid, address):
            for gone in abandoned(address):  # closed without waiting for a poll that will never come
                socket = eio.sockets.get(gone)
                if socket is not None:
                    socket.close(wait=False, abort=True)
                release(gone)
            if not take_place(sid, address):
                return False
        try:
            accepted = connect(sid, environ, *args) if connect else None
        except BaseException:
            release(sid)
            raise
        if accepted is False:
            release(sid)
        return accepted

    def on_disconnect(sid, *args):
        release(sid)
        return disconnect(sid, *args) if disconnect else None

    def handle_request(environ, start_response):
        """Engine.IO's, noting which sockets have a request under way (a long poll, a websocket)."""
        sid = urllib.parse.parse_qs(environ.get("QUERY_STRING", "")).get("sid", [None])[0]
        with lock:
            known = sid in where
            if known:
                under_way[sid] += 1
        try:
            return handle(environ, start_response)
        finally:
            if known:
                with lock:
                    if sid in where:
                        under_way[sid] -= 1
                        last_seen[sid] = time.monotonic()

    eio.on("connect", on_connect)
    eio.on("disconnect", on_disconnect)
    eio.handle_request = handle_request


def charge_write(nbytes):
    """Before a new row of a request's client is stored (app.web.share.save, app.course.puzzles.save): one of
    its address's writes (TooManyWrites), and room in the database (app.db.StorageFull)."""
    limiter = current_app.extensions["write_limiter"]
    wait_s = limiter.take(current_address())
    if wait_s > 0:
        raise TooManyWrites(wait_s, current_app.config["WRITES_PER_MINUTE"])
    db.check_room(db.get_db(), nbytes, current_app.config)
