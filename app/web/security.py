"""What the web side does for its own safety: the key that signs sessions, the client's address
behind proxies, and the headers of every response.

SECRET_KEY signs the session cookie, which names a run's owner: whoever knows the key can be any
owner. With none set, one is made on the first start (secrets.token_hex(32)) and kept in the
instance folder, mode 0600, created once, atomically, so that every web process of the host (and
every restart) uses the same one. `dev`, the old default, is refused outside tests.

Headers (every response): `X-Content-Type-Options: nosniff`, `Referrer-Policy: same-origin`, and on
every page (an HTML response) a Content-Security-Policy: scripts only from the server itself (plus the editor's one
inline import map, by a nonce made per response), no plugins, no <base>, forms post only here,
connections (fetch, Socket.IO) only here; styles from here, with inline `style` attributes and the
elements scripts add (Plotly's and CodeMirror's) allowed, as no script can run that the policy did
not allow. `frame-ancestors`: FRAME_ANCESTORS for the embed (`?embed=1`) of the pages meant to be
embedded (the editor's, the gallery's and a shared link's: allow_embedding()), the playground itself
for every other page (`X-Frame-Options: SAMEORIGIN` too, for browsers without CSP), whatever its
query says: a class's, a teacher's or a puzzle's page is never framed by another site. The session
cookie is SameSite=Lax, and Secure on a request that came over https (as TRUSTED_PROXY_HOPS
proxies say).
"""
import logging
import os
import secrets

from flask import g, request
from flask.sessions import SecureCookieSessionInterface
from werkzeug.middleware.proxy_fix import ProxyFix

log = logging.getLogger(__name__)
KEY_FILE = "secret_key"
WEAK_KEYS = {"dev"}  # the old default: every copy of this code knows it


class InsecureSecretKey(RuntimeError):
    """The server would sign sessions with a key anyone knows: it does not start."""


def secret_key(config, instance_path):
    """The key to sign sessions with: SECRET_KEY, else the instance folder's (made on first start).
    Raises InsecureSecretKey for `dev` outside tests."""
    key = config.get("SECRET_KEY")
    if key:
        if key in WEAK_KEYS and not config.get("TESTING"):
            raise InsecureSecretKey(f"SECRET_KEY is {key!r}, a key anyone can sign a session cookie with (and so be "
                                    f"any owner): set a random one (python -c 'import secrets; "
                                    f"print(secrets.token_hex(32))'), or leave SECRET_KEY unset to have one made "
                                    f"and kept in {os.path.join(instance_path, KEY_FILE)}")
        return key
    return stored_key(os.path.join(instance_path, KEY_FILE))


def stored_key(path):
    """The key kept at `path`, made there first if there is none: written to a temp file of mode
    0600 and linked into place, so that of two processes starting at once one makes it and both
    read the same; a key file others may read is refused."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    if not os.path.exists(path):
        temp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(temp, path)  # fails if another process linked its key first: then that one is the key
                log.info("made a new SECRET_KEY in %s", path)
            except FileExistsError:
                pass
        finally:
            os.unlink(temp)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as f:
        if os.fstat(f.fileno()).st_mode & 0o077:
            raise InsecureSecretKey(f"{path} can be read by other users (mode {os.fstat(f.fileno()).st_mode & 0o777:o}); "
                                    f"chmod 600 it, or remove it to have a new key made")
        key = f.read().strip()
    if len(key) < 32:
        raise InsecureSecretKey(f"{path} holds no key (or a short one); remove it to have a new one made")
    return key


class SessionInterface(SecureCookieSessionInterface):
    """Flask's signed cookie, Secure whenever the request came over https."""

    def get_cookie_secure(self, app):
        return bool(app.config["SESSION_COOKIE_SECURE"] or request.is_secure)


def content_security_policy(nonce, frame_ancestors):
    return "; ".join([
        "default-src 'self'",
        f"script-src 'self' 'nonce-{nonce}'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        f"frame-ancestors {frame_ancestors}",
    ])


def csp_nonce():
    """This response's nonce, for the one inline script a template needs (the editor's import map)."""
    if "csp_nonce" not in g:
        g.csp_nonce = secrets.token_urlsafe(18)
    return g.csp_nonce


def allow_embedding():
    """This response is an embed, of a page meant to be one: FRAME_ANCESTORS may frame it."""
    g.embeddable = True


def add_headers(response, frame_ancestors):
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    if response.mimetype == "text/html":  # a document: what the policy is for (JSON and files are not run)
        embed = g.get("embeddable", False)
        response.headers.setdefault("Content-Security-Policy",
                                    content_security_policy(csp_nonce(), frame_ancestors if embed else "'self'"))
        if not embed:
            response.headers.setdefault("X-Frame-Options", "SAMEORIGIN")
    return response


def init_app(app):
    """Secret key, cookie flags, proxies and headers, once the config is final."""
    app.secret_key = app.config["SECRET_KEY"] = secret_key(app.config, app.instance_path)
    app.session_interface = SessionInterface()
    app.config["SESSION_COOKIE_SAMESITE"] = app.config.get("SESSION_COOKIE_SAMESITE") or "Lax"
    app.config["SESSION_COOKIE_HTTPONLY"] = True
    frame_ancestors = (app.config.get("FRAME_ANCESTORS") or "*").strip()
    app.after_request(lambda response: add_headers(response, frame_ancestors))
    app.jinja_env.globals["csp_nonce"] = csp_nonce


def trust_proxies(app):
    """Behind TRUSTED_PROXY_HOPS proxies, the client's address, scheme and host are the ones they
    forwarded. Wraps everything (Socket.IO's handshake included), so call it last."""
    hops = app.config.get("TRUSTED_PROXY_HOPS") or 0
    if hops > 0:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)
