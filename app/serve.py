"""The web server, as `make run` and the Docker image start it:

    python -m app.serve     # gunicorn, one gevent worker process, HOST:PORT, CONNECTIONS

One web process serves every connection. Under gunicorn's gevent worker each connection is a
greenlet, not a thread: an idle Socket.IO connection costs a few kilobytes and no thread, so a
classroom's thousand open pages fit in one process beside the page, API and /healthz requests.
The worker patches the standard library (gevent.monkey.patch_all) before it imports the app, as
Flask-SocketIO documents for `gunicorn -k gevent -w 1`; app.create_app then picks the gevent mode,
and the dispatcher's threads, queues, pipes and polls become cooperative. The sandbox's workers are
new interpreters (`python -m sandbox.worker`), never patched.

One process, not several: Socket.IO's long-polling needs every request of a client to reach the
process that holds its session (gunicorn cannot route by session), and the dispatcher's queue is
the one place that knows who waits. More processes behind one address take a message queue and a
shared dispatch (REDIS_URL, see docs/scale-out.md).
"""
import os
import resource
import sys

from app.config import from_environment

# Descriptors besides the connections: the worker pool's pipes, the database, logs, gunicorn's own.
SPARE_FDS = 1024
# Seconds an idle keep-alive connection stays open (gunicorn's default is 2). A long-polling client
# posts on a second connection (its pongs, every 25 s, and its events); closed under it while it
# sends, that post is reset and the client drops its session. Longer than the ping interval, the
# connection never idles that long; idle, it costs a greenlet.
KEEP_ALIVE_S = 75


def command(config):
    """gunicorn trusts no peer's forwarded headers (`--forwarded-allow-ips ''`; its default trusts
    loopback's `X-Forwarded-Proto`): the app alone decides, by TRUSTED_PROXY_HOPS
    (app.web.security.trust_proxies), so 0 means that no forwarded header is believed."""
    return [sys.executable, "-m", "gunicorn", "--worker-class", "gevent", "--workers", "1",
            "--worker-connections", str(config["CONNECTIONS"]), "--bind", f"{config['HOST']}:{config['PORT']}",
            "--keep-alive", str(KEEP_ALIVE_S), "--timeout", "0", "--forwarded-allow-ips", "",
            "app:create_app()"]


def raise_fd_limit(connections):
    """Each connection holds a descriptor: raise the soft limit (often 1,024) toward the hard one,
    so that the CONNECTIONS-th connection is not refused for want of a descriptor."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + SPARE_FDS
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))


def main():
    config = from_environment()
    raise_fd_limit(config["CONNECTIONS"])
    argv = command(config)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
