"""One tab, as a benchmark's outside client: runs specs over Socket.IO and times them end to end.

It is python-socketio's asyncio client on its own event loop thread: its websocket is aiohttp's,
whose C parts read a megabyte of trace about as fast as a browser does. (The threaded client's
websocket-client takes ~0.25 s more for each megabyte, which a person in a browser never waits for.)
"""
import asyncio
import threading
import time

import socketio


class Tab:
    def __init__(self, url, timeout_s=300):
        self.timeout_s = timeout_s
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.sio = socketio.AsyncClient()
        self.parts = {}  # part -> ms from sending the run to its run_partial (docs/events.md)
        self.phases = {}  # run_status phase -> ms from sending the run to its first run_status of that phase
        self.sio.on("run_result", self._on_result)
        self.sio.on("run_partial", self._on_partial)
        self.sio.on("run_status", self._on_status)
        self._call(self.sio.connect(url, transports=["websocket"], wait_timeout=20))

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(self.timeout_s)

    async def _on_result(self, data):
        self.arrived = time.perf_counter()
        if not self.waiting.done():
            self.waiting.set_result(data["result"])

    async def _on_partial(self, data):
        self.parts[data["part"]] = (time.perf_counter() - self.started) * 1e3

    async def _on_status(self, data):
        self.phases.setdefault(data.get("phase"), (time.perf_counter() - self.started) * 1e3)

    async def _run(self, spec):
        self.waiting = self.loop.create_future()
        self.parts, self.phases = {}, {}
        await self.sio.call("run", {"spec": spec}, timeout=self.timeout_s)
        return await asyncio.wait_for(self.waiting, self.timeout_s)

    def run(self, spec):
        """(milliseconds from sending the run to its result's arrival, the result)."""
        self.started = time.perf_counter()
        result = self._call(self._run(spec))
        return (self.arrived - self.started) * 1e3, result

    def compile(self, spec, timeout_s=2.0):
        """Ask the server to compile `spec` ahead of a run (the `compile` event); False when the
        server does not answer it."""
        try:
            self._call(self.sio.call("compile", {"spec": spec}, timeout=timeout_s))
            return True
        except Exception:  # no such event on this server: the call times out
            return False

    def close(self):
        self._call(self.sio.disconnect())
        self.loop.call_soon_threadsafe(self.loop.stop)
