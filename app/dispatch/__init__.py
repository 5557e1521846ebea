"""Runs from the web side to the workers: the Dispatcher protocol (interface), the queue (jobs), a
worker slot (slot), the embedded pool (pool) and the Celery scale-out (remote, celery_worker, runstate)."""
