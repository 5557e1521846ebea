"""GET /metrics: the operator's view in Prometheus' text format (prometheus_client), for the
addresses METRICS_ALLOW names only (loopback by default; behind a proxy the client's address is the
forwarded one: TRUSTED_PROXY_HOPS).

One registry per app (never prometheus_client's global one): the dispatch's own counts (its
`metrics`, a collector: app.dispatch.metrics) and, read at each scrape, what /healthz reads (the
queue, each worker's state, runs, restarts, failed starts and busy time, the server's own work set
aside for people) and the Socket.IO connections open."""
import ipaddress

from flask import Blueprint, Response, current_app, request
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from werkzeug.exceptions import Forbidden

bp = Blueprint("metrics", __name__)
WORKER_STATES = ("starting", "ready", "busy", "dead")


def allowed_networks(setting):
    """METRICS_ALLOW's addresses and networks (`127.0.0.1,::1`, `10.0.0.0/8`); ValueError names a bad one."""
    networks = []
    for entry in filter(None, (part.strip() for part in str(setting).split(","))):
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"METRICS_ALLOW: {entry!r} is not an address or a network (10.0.0.0/8)") from None
    return networks


def may_read(address, networks):
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip in network for network in networks)


class ServerState:
    """The state /healthz reports, as metrics, read when scraped."""

    def __init__(self, dispatcher, socketio):
        self.dispatcher, self.socketio = dispatcher, socketio

    def collect(self):
        health = self.dispatcher.health()
        yield GaugeMetricFamily("playground_healthy", "1 while /healthz says ok", value=int(bool(health.get("ok"))))
        yield GaugeMetricFamily("playground_queue_depth", "Runs waiting for a worker", value=health.get("queued") or 0)
        server = getattr(self.socketio, "server", None)
        sockets = getattr(getattr(server, "eio", None), "sockets", None)
        if sockets is not None:
            yield GaugeMetricFamily("playground_connections", "Socket.IO connections open to this web process",
                                    value=len(sockets))
        yield from worker_families(health.get("workers") or [])


def worker_families(workers):
    labels = ["slot", "gpu"]
    state = GaugeMetricFamily("playground_worker_state", "1 for each worker's state", labels=labels + ["state"])
    families = {
        "runs": CounterMetricFamily("playground_worker_runs", "Jobs each worker finished", labels=labels),
        "restarts": CounterMetricFamily("playground_worker_restarts", "Workers replaced (a run that died, timed "
                                        "out or was stopped)", labels=labels),
        "start_failures": CounterMetricFamily("playground_worker_failed_starts", "Worker starts that failed",
                                              labels=labels),
        "busy_total_s": CounterMetricFamily("playground_worker_busy_seconds", "Time each worker (its GPU, on a GPU "
                                            "host) spent on runs", labels=labels),
        "preemptions": CounterMetricFamily("playground_worker_preemptions", "Runs of the server's own work a worker "
                                           "set aside for a person's run", labels=labels),
    }
    for worker in workers:
        at = [str(worker.get("slot")), str(worker.get("gpu") if worker.get("gpu") is not None else "none")]
        for name in WORKER_STATES:
            state.add_metric(at + [name], int(worker.get("state") == name))
        for field, family in families.items():
            if isinstance(worker.get(field), (int, float)):
                family.add_metric(at, worker[field])
    yield state
    yield from families.values()


def registry_for(dispatcher, socketio):
    registry = CollectorRegistry()
    if getattr(dispatcher, "metrics", None) is not None:  # the embedded pool's (a Celery worker counts its own)
        registry.register(dispatcher.metrics)
    registry.register(ServerState(dispatcher, socketio))
    return registry


def init_app(app, dispatcher, socketio):
    app.extensions["metrics"] = {"registry": registry_for(dispatcher, socketio),
                                 "allow": allowed_networks(app.config["METRICS_ALLOW"])}
    app.register_blueprint(bp)


@bp.get("/metrics")
def metrics():
    found = current_app.extensions["metrics"]
    if not may_read(request.remote_addr, found["allow"]):
        raise Forbidden("the metrics are for the addresses METRICS_ALLOW names")
    return Response(generate_latest(found["registry"]), content_type=CONTENT_TYPE_LATEST)
