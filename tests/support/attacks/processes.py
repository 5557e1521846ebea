"""Attacks on processes: the host's, the web server's, another run's, a run's own worker."""

PROC_LISTING = "attempt('pids', visible_pids)"

KILL_HOST_PROCESSES = """
attempt('kill_victim', os.kill, CONTEXT['victim_pid'], signal.SIGKILL)
attempt('signal_test_process', os.kill, CONTEXT['test_pid'], 0)
attempt('signal_worker', os.kill, CONTEXT['worker_pids'][0], 0)
"""

KILL_GUNICORN_MASTER = """
bind = '127.0.0.1:%d' % CONTEXT['port']
attempt('servers_seen', lambda: [p for p in visible_pids() if 'gunicorn' in cmdline(p) and bind in cmdline(p)])
attempt('kill_master', os.kill, CONTEXT['master_pid'], signal.SIGKILL)
"""

KILL_WEB_PROCESS = "attempt('kill_web_process', os.kill, CONTEXT['server_pid'], signal.SIGKILL)"

CONTROL_SOCKET = """
def shutdown_quick(path):
    request = _json.dumps({'id': 1, 'command': 'shutdown quick', 'args': []}).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(3)
        s.connect(path)
        s.sendall(struct.pack('>I', len(request)) + request)
        return s.recv(4096).decode(errors='replace')
attempt('server_control_socket', shutdown_quick, CONTEXT['ctl_socket'])
attempt('home_control_socket', shutdown_quick, os.path.expanduser('~/.gunicorn/gunicorn.ctl'))
"""

SERVER_OOM_SCORE = """
attempt('master_oom_score_adj', write_back, '/proc/%d/oom_score_adj' % CONTEXT['master_pid'])
attempt('web_oom_score_adj', write_back, '/proc/%d/oom_score_adj' % CONTEXT['server_pid'])
"""

SERVER_ENVIRON = """
attempt('master_environ', read, '/proc/%d/environ' % CONTEXT['master_pid'])
attempt('web_environ', read, '/proc/%d/environ' % CONTEXT['server_pid'])
attempt('secret_in_own_environment', lambda: 'SECRET_KEY' in os.environ
        or any(CONTEXT['secret'] in value for value in os.environ.values()))
"""

OWN_ENVIRONMENT = """
attempt('secret_key', lambda: 'SECRET_KEY' in os.environ)
attempt('credential', lambda: [k for k, v in os.environ.items() if 'API_KEY' in k or CONTEXT['credential'] in v])
attempt('names', lambda: sorted(os.environ))
attempt('secret_value', lambda: any(CONTEXT['secret'] in value for value in os.environ.values()))
attempt('test_process_environ', read, '/proc/%d/environ' % CONTEXT['test_pid'])
"""

# Runs B of another owner while run A (which named itself CONTEXT['comm']) sleeps on the other worker.
KILL_CONCURRENT_RUN = """
attempt('seen', lambda: [p for p in visible_pids() if comm(p) == CONTEXT['comm']])
attempt('kill_by_comm', lambda: kill_each([p for p in visible_pids() if comm(p) == CONTEXT['comm']]))
attempt('kill_by_pid', os.kill, CONTEXT['other_run_pid'], signal.SIGKILL)
"""

SLEEPER = """
libc.prctl(15, CONTEXT['comm'].encode(), 0, 0, 0)  # PR_SET_NAME: what the other run looks for
time.sleep(6)
"""

KILL_IDLE_RUNS = "attempt('kill_idle_runs', kill_each, [p for p in CONTEXT['idle_runs'] if p != os.getpid()])"

KILL_WORKER_LEAVE_DAEMON = """
def daemon():
    if os.fork() == 0:  # detached the classic way: a new session, then a second fork
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(60)', CONTEXT['marker']])
        os._exit(0)
    os.wait()
    return 'started'
attempt('daemon', daemon)
parent = os.getppid()
attempt('kill_worker', kill_each, [parent] if parent in CONTEXT['worker_pids'] else CONTEXT['worker_pids'])
"""
