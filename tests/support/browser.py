"""Debian's chromium as the tests launch it, and the pages a test opens in it."""
import contextlib
import re

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

_FUNCTION = re.compile(r"^\s*(async\s+)?(function\b|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)")


def predicates_as_functions():
    """Make wait_for_function(expression) poll a function. The pages' Content-Security-Policy allows
    no eval ('unsafe-eval'), and Playwright polls a plain expression by eval'ing it in the page (its
    first check is not): an expression such as "window.playground !== undefined" becomes
    "() => (window.playground !== undefined)", which it calls instead."""
    from playwright._impl.frame import Frame
    if getattr(Frame.wait_for_function, "as_function", False):
        return
    original = Frame.wait_for_function

    async def wait_for_function(self, expression, *args, **kwargs):
        if not _FUNCTION.match(expression):
            expression = f"() => ({expression})"
        return await original(self, expression, *args, **kwargs)

    wait_for_function.as_function = True
    Frame.wait_for_function = wait_for_function


def new_page(browser, width=1440, height=900, console=True, **context_options):
    """A page in its own context (no shared storage), recording script errors (and, with `console`,
    console errors) in `page.errors`."""
    page = browser.new_context(viewport={"width": width, "height": height}, **context_options).new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    if console:
        page.on("console", lambda message: message.type == "error" and page.errors.append(message.text))
    return page


@contextlib.contextmanager
def page_without_errors(browser, **page_options):
    """new_page(...) for a test, which fails on any error it recorded once the page is closed."""
    page = new_page(browser, **page_options)
    yield page
    errors = page.errors
    page.context.close()
    assert not errors, errors


def set_source(page, source):
    """Replace the editor's whole text, as typing would."""
    page.evaluate("""(source) => { const v = window.playground.editorView;
        v.dispatch({changes: {from: 0, to: v.state.doc.length, insert: source}}); }""", source)
