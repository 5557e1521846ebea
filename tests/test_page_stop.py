"""Stop and the time limit in the page, at 1280x720, through the real server and one real worker:
the Stop button ends a run and Run works again; the form warns before a launch the interpreter will
not finish in time, and a run that hits the limit says in which phase it was and what to turn off. (The `stop` event itself: tests/test_stop.py. Not in one module: Socket.IO's
test client takes over its app's sending, so a browser on that app would hear nothing.)"""

import pytest

from tests.support.apps import running_app, served, wait_until_busy, wait_until_ready
from tests.support.browser import page_without_errors, set_source
from tests.support.kernels import ENDLESS, VECTOR_ADD
from tests.test_browser import open_playground, run_and_wait

pytestmark = pytest.mark.browser

TIMEOUT_S = 4.0
SHOTS = "/tmp/shots"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("db"), WORKERS=1, RUN_TIMEOUT_S=TIMEOUT_S) as app:
        yield app


@pytest.fixture(scope="module")
def server(app):
    with served(app) as url:
        yield url


def ready(app):
    wait_until_ready(app, timeout_s=60)


# ---- the page ----------------------------------------------------------------------------------

@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=720, console=False) as page:
        yield page



def test_the_stop_button_ends_a_run_and_run_works_again(app, server, page):
    ready(app)
    open_playground(page, server + "/")
    assert page.locator("#stop-button").is_hidden()
    set_source(page, ENDLESS)
    page.click("#run-button")
    page.wait_for_function("document.querySelector('#stop-button').hidden === false")
    wait_until_busy(app)
    page.screenshot(path=f"{SHOTS}/stop-while-running.png")
    page.click("#stop-button")
    page.wait_for_function("document.querySelector('#status-line').dataset.state === 'error'", timeout=5000)
    assert page.locator("#stop-button").is_hidden()
    assert page.text_content("#error-card .phase") == "stopped"
    assert "you stopped this run" in page.text_content("#error-card pre")
    page.screenshot(path=f"{SHOTS}/stop-stopped.png")

    ready(app)
    set_source(page, VECTOR_ADD)
    assert run_and_wait(page) == "ok"


def test_a_run_over_the_limit_says_which_phase_it_was_in_and_what_to_turn_off(app, server, page):
    ready(app)
    open_playground(page, server + "/")
    assert page.locator("#launch-estimate").is_hidden()  # 97 programs: well within 4 s
    page.fill("input[data-param=BLOCK_SIZE]", "4")  # 24,608 programs, each run one after another
    page.wait_for_selector("#launch-estimate:not([hidden])")
    warning = page.inner_text("#launch-estimate")
    assert "24,608 programs, run one after another" in warning and "will not fit in the 4 s limit" in warning
    page.screenshot(path=f"{SHOTS}/estimate-warning.png")
    assert run_and_wait(page) == "error"  # and indeed it does not
    assert page.text_content("#error-card .phase") == "timed out"
    advice = page.text_content("#error-card .timeout-advice")
    assert advice.startswith("The limit struck while running.")
    assert "bigger BLOCK" in advice and "unticking trace" in advice
    page.screenshot(path=f"{SHOTS}/timeout-advice.png")
