"""The runs' state shared through Redis when the server scales out (REDIS_URL): what the web
processes and the Celery workers must agree on, each step one atomic command or script.

  waiting   the runs queued and not yet taken, oldest first (a sorted set scored by Redis's clock),
            and one such set per owner and one per client address: QUEUE_LIMIT, QUEUE_PER_OWNER
            and QUEUE_PER_ADDRESS count these, as the embedded queue does, whichever web process
            took the run
  taken     run:<id>:taken, set once: by the worker that claims the run (its id), or by a web process
            that withdraws it ("withdrawn": its client left, it waited too long). A worker runs only
            a run it claimed, so a message the broker delivers twice never runs twice
  result    run:<id>:result, set once, by whoever gives the run its one result: its worker, or the web
            process that found its worker gone
  reply     run:<id>:reply, the result of a POST /api/run run, which its web process waits for
  inbox     results-for:<web process>, the results of the runs whose web process asked for them
            (a class's graded run: its verdict is kept there), each with its run id
  stop      run:<id>:stop, set by the web process whose client pressed Stop; the worker running
            the run sees it at its next heartbeat and ends the run
  workers   worker:<id>, each worker's heartbeat (its slot's state and device), expiring
            HEARTBEAT_TTL_S after its last beat: a worker whose heartbeat is gone was lost
"""
import json

PREFIX = "playground:"
SOCKETIO_CHANNEL = "playground-socketio"  # Flask-SocketIO's message queue: web processes and workers
HEARTBEAT_S = 1.0
HEARTBEAT_TTL_S = 10  # a worker silent this long is lost (a loaded host may pause a beat or two)
# A run's keys outlive any delivery of its message: the broker gives an unacknowledged message to
# another worker after its visibility timeout (an hour), and that worker must find the run taken.
KEEP_S = 2 * 3600
REPLY_KEEP_S = 120  # a reply nobody collected: its request has gone

# KEYS: waiting, the owner's waiting, the address's waiting; ARGV: run id, now, QUEUE_LIMIT,
# QUEUE_PER_OWNER, stale before, QUEUE_PER_ADDRESS (0: no address, the server's own work).
# Returns the run's place in line, or -1 (the owner's share is full), -2 (the queue is full) or -3
# (the address's share is full). Entries older than any run can wait are dropped first: a web
# process that died left them there.
ENQUEUE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[5])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return -1 end
local per_address = tonumber(ARGV[6])
if per_address > 0 and redis.call('ZCARD', KEYS[3]) >= per_address then return -3 end
local waiting = redis.call('ZCARD', KEYS[1])
if waiting >= tonumber(ARGV[3]) then return -2 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('EXPIRE', KEYS[2], 86400)
if per_address > 0 then
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
  redis.call('EXPIRE', KEYS[3], 86400)
end
return waiting + 1
"""

# KEYS: taken, waiting, the owner's waiting, the address's waiting; ARGV: run id, taken by, keep.
# 1 if this call took it.
TAKE = """
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'EX', ARGV[3]) then
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('ZREM', KEYS[4], ARGV[1])
  return 1
end
return 0
"""

WITHDRAWN = "withdrawn"


class RunState:
    def __init__(self, redis):
        self.redis = redis
        self._enqueue, self._take = redis.register_script(ENQUEUE), redis.register_script(TAKE)

    @staticmethod
    def key(*parts):
        return PREFIX + ":".join(parts)

    def now(self):
        """Redis's clock: the web processes' and the workers' hosts may disagree on theirs."""
        seconds, micros = self.redis.time()
        return seconds + micros / 1e6

    def address_key(self, address):
        return self.key("waiting-from", address or "-")

    def enqueue(self, run_id, owner, limit, per_owner, stale_before, address=None, per_address=0):
        """The run's place in line (1: next), or -1 / -2 / -3: see ENQUEUE."""
        return int(self._enqueue(keys=[self.key("waiting"), self.key("waiting", owner), self.address_key(address)],
                                 args=[run_id, self.now(), limit, per_owner, stale_before,
                                       per_address if address else 0]))

    def take(self, run_id, owner, by, address=None):
        """Claim a waiting run for `by` (a worker's id, or WITHDRAWN); False if someone took it first."""
        return bool(self._take(keys=[self.key("run", run_id, "taken"), self.key("waiting"), self.key("waiting", owner),
                                     self.address_key(address)],
                               args=[run_id, by, KEEP_S]))

    def taken_by(self, run_id):
        found = self.redis.get(self.key("run", run_id, "taken"))
        return found.decode() if found is not None else None

    def finish(self, run_id):
        """True for the one caller that gives the run its result; False for any later one."""
        return bool(self.redis.set(self.key("run", run_id, "result"), 1, nx=True, ex=KEEP_S))

    def request_stop(self, run_id):
        self.redis.set(self.key("run", run_id, "stop"), 1, ex=KEEP_S)

    def stop_requested(self, run_id):
        return bool(self.redis.exists(self.key("run", run_id, "stop")))

    def finished(self, run_id):
        return bool(self.redis.exists(self.key("run", run_id, "result")))

    def reply(self, run_id, result):
        key = self.key("run", run_id, "reply")
        self.redis.pipeline().rpush(key, json.dumps(result)).expire(key, REPLY_KEEP_S).execute()

    def wait_reply(self, run_id, timeout_s):
        """The result pushed by reply(), or None after timeout_s."""
        found = self.redis.blpop([self.key("run", run_id, "reply")], timeout=max(1, int(timeout_s)))
        return json.loads(found[1]) if found else None

    def inbox(self, web_process):
        return self.key("results-for", web_process)

    def send_result(self, inbox, run_id, result):
        self.redis.pipeline().rpush(inbox, json.dumps([run_id, result])).expire(inbox, REPLY_KEEP_S).execute()

    def next_result(self, inbox, timeout_s):
        """(run id, result) from `inbox`, or None after timeout_s."""
        found = self.redis.blpop([inbox], timeout=max(1, int(timeout_s)))
        return tuple(json.loads(found[1])) if found else None

    def queued(self):
        return int(self.redis.zcard(self.key("waiting")))

    def beat(self, worker_id, info):
        self.redis.set(self.key("worker", worker_id), json.dumps(info), ex=HEARTBEAT_TTL_S)

    def gone(self, worker_id):
        self.redis.delete(self.key("worker", worker_id))

    def workers(self):
        """The heartbeats of the workers online, by id."""
        keys = sorted(self.redis.scan_iter(match=self.key("worker", "*"), count=1000))
        beats = self.redis.mget(keys) if keys else []
        return [json.loads(beat) for beat in beats if beat is not None]
