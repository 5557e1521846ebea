"""Compile ahead in a real browser, through the real server and its real workers: a compile error
marks the editor's line as the person types, before any Run; a clean edit clears it; the Run that
follows says its kernel was compiled ahead."""
import uuid

import pytest

from tests.support.apps import running_app, served, wait_until_ready
from tests.support.browser import page_without_errors
from tests.support.kernels import vector_add_spec
from tests.test_browser import RUN_TIMEOUT_MS, open_playground

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("db"), WORKERS=1) as app:
        yield app


@pytest.fixture(scope="module")
def server(app):
    with served(app) as url:
        yield url


def type_over(page, old, new):
    """Select `old` in the editor (its first occurrence) and type `new` over it, key by key."""
    page.evaluate("""([old]) => {
        const view = window.playground.editorView;
        const at = view.state.doc.toString().indexOf(old);
        view.dispatch({ selection: { anchor: at, head: at + old.length } });
        view.focus();
    }""", [old])
    page.keyboard.type(new, delay=40)


def test_a_compile_error_marks_its_line_while_typing_and_the_run_after_was_compiled_ahead(app, server, browser):
    with page_without_errors(browser, width=1280, height=800) as page:
        wait_until_ready(app, timeout_s=60)
        open_playground(page, server + "/")
        spec = vector_add_spec(n=4096, ir=True)
        spec["source"] += f"\n# {uuid.uuid4().hex}\n"
        page.evaluate("(spec) => window.playground.setSpec(spec)", spec)
        type_over(page, "tl.arange(0, BLOCK_SIZE)", "tl.arange(0, 3)")
        page.wait_for_selector(".cm-error-line", timeout=RUN_TIMEOUT_MS)  # no Run pressed
        page.screenshot(path=f"{SHOTS}/compile-ahead-error.png")
        assert "power of 2" in page.text_content(".cm-error-inline")
        assert page.get_attribute("#status-line", "data-state") != "running"
        line = page.evaluate("""() => {
            const view = window.playground.editorView;
            return view.state.doc.lineAt(view.state.doc.toString().indexOf("tl.arange(0, 3)")).number;
        }""")
        marked = page.evaluate("""() => [...document.querySelectorAll('.cm-line')].findIndex(
            (el) => el.classList.contains('cm-error-line'))""")
        first_shown = page.evaluate("() => window.playground.editorView.viewport.from")
        assert first_shown == 0 and marked + 1 == line

        type_over(page, "tl.arange(0, 3)", "tl.arange(0, BLOCK_SIZE)")
        page.wait_for_selector(".cm-error-line", state="detached", timeout=RUN_TIMEOUT_MS)
        page.wait_for_timeout(4000)  # the person reads, the server compiles
        page.click("#run-button")
        page.wait_for_function("() => document.querySelector('#status-line').dataset.state === 'ok'",
                               timeout=RUN_TIMEOUT_MS)
        page.click("[data-tab=results]")
        page.screenshot(path=f"{SHOTS}/compile-ahead-run.png")
        assert "Compiled ahead while you typed" in page.text_content("#results")
