"""Runs from the web side to the workers: the Dispatcher protocol (interface), the queue (jobs), a
worker slot (slot), the embedded pool (pool), the runs' memory (memory) and the Celery scale-out
(remote, celery_worker, runstate). It imports app/'s shared modules (owners, the gallery, the
settings) and sandbox/'s contracts, never app.web or app.course; its settings come in the config
it is given, none read at import."""
