"""A real PostgreSQL server for the tests, made from scratch: initdb into a temporary folder, the
server on a free port of 127.0.0.1 (and a socket in that folder), stopped and removed after. Debian's
`postgresql` package (.ci/run installs it); as root, it runs as the `postgres` user (or nobody),
since PostgreSQL refuses to run as root."""
import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

from benchmarks.server import free_port


def binaries():
    """The folder of the newest installed PostgreSQL's initdb and postgres, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[-3]))
    found = found or ([shutil.which("initdb")] if shutil.which("initdb") else [])
    return os.path.dirname(found[-1]) if found else None


class PostgresServer:
    def __init__(self):
        self.bin, self.port, self.proc = binaries(), free_port(), None
        self.root = tempfile.mkdtemp(prefix="playground-pg-")
        self.user = None
        if os.geteuid() == 0:
            self.user = next((name for name in ("postgres", "nobody") if _exists(name)), None)
            os.chown(self.root, pwd.getpwnam(self.user).pw_uid, pwd.getpwnam(self.user).pw_gid)
        self.url = f"postgresql://playground@127.0.0.1:{self.port}/playground"

    def _run(self, *argv):
        return subprocess.run([os.path.join(self.bin, argv[0]), *argv[1:]], user=self.user, check=True,
                              capture_output=True, cwd=self.root)

    def start(self, timeout_s=60):
        data = os.path.join(self.root, "data")
        self._run("initdb", "-D", data, "-U", "playground", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.log = open(os.path.join(self.root, "server.log"), "ab")
        self.proc = subprocess.Popen([os.path.join(self.bin, "postgres"), "-D", data, "-p", str(self.port),
                                      "-h", "127.0.0.1", "-k", self.root, "-c", "fsync=off"],
                                     user=self.user, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        import psycopg
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with psycopg.connect(self.url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
                    conn.execute("CREATE DATABASE playground")
                return self
            except psycopg.OperationalError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"PostgreSQL did not start: see {self.root}/server.log")
                time.sleep(0.1)

    def database(self, name):
        """The URL of a new, empty database `name` on this server."""
        import psycopg
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + "/" + name

    def stop(self):
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGINT)  # a fast shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)


def _exists(user):
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False
