"""The result in parts, in a real browser through the real server and one real worker: the verdict
and the diagram are on the page before the IR, whose tab says it is still coming, and Stop still
ends a run between its parts."""
import uuid

import pytest

from tests.support.apps import running_app, served, wait_until_ready
from tests.support.browser import page_without_errors
from tests.support.kernels import vector_add_spec
from tests.test_browser import RUN_TIMEOUT_MS, open_playground

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"

# When each of these first shows on the page, and what the Timings and IR tabs said at that moment.
RECORD = """() => {
  const seen = window.seen = {};
  const text = (selector) => document.querySelector(selector).textContent;
  const moments = {
    verdict: () => document.querySelector("#results .summary-icon.ok"),
    diagram: () => document.querySelector("#diagram .diagram-grid-plot .nsewdrag"),
    ir: () => document.querySelector("#ir .ir-stage"),
    result: () => ["ok", "mismatch", "error"].includes(document.querySelector("#status-line").dataset.state),
  };
  new MutationObserver(() => {
    for (const [name, shown] of Object.entries(moments)) {
      if (!seen[name] && shown()) {
        seen[name] = { at: performance.now(), ir: text("#ir"), timings: text("#timings"),
                       state: document.querySelector("#status-line").dataset.state };
      }
    }
  }).observe(document.body, { childList: true, subtree: true, attributes: true });
}"""


def slow_spec():
    """The vector add as the page runs it (check, trace, bench and IR on), a kernel no run compiled
    before (its IR compiles from scratch), and a reference that takes ~0.1 s, timed for ~1 s after
    the check: the timings and the IR come well after the verdict and the diagram."""
    spec = vector_add_spec(source=vector_add_spec()["source"] + f"\n# {uuid.uuid4().hex}\n",
                           check=True, trace=True, bench=True, ir=True)
    spec["reference"] = {"out": "x + y + 0 * (torch.ones(1200, 1200) @ torch.ones(1200, 1200)).sum()"}
    return spec


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("db"), WORKERS=1, SHARED_KERNELS=0) as app:
        yield app


@pytest.fixture(scope="module")
def server(app):
    with served(app) as url:
        yield url


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1280, height=800) as page:
        yield page


def load(page, server, app, spec):
    wait_until_ready(app, timeout_s=60)
    open_playground(page, server + "/")
    page.evaluate("(spec) => window.playground.setSpec(spec)", spec)


def test_the_verdict_and_the_diagram_arrive_before_the_ir_which_says_it_is_coming(app, server, page):
    load(page, server, app, slow_spec())
    page.click("[data-tab=diagram]")
    page.evaluate(RECORD)
    page.click("#run-button")
    page.wait_for_selector("#diagram .diagram-grid-plot .nsewdrag", timeout=RUN_TIMEOUT_MS)
    page.screenshot(path=f"{SHOTS}/stream-diagram-before-ir.png")
    page.click("[data-tab=ir]")
    page.screenshot(path=f"{SHOTS}/stream-ir-coming.png")
    page.wait_for_function("window.seen.result", timeout=RUN_TIMEOUT_MS)
    seen = page.evaluate("window.seen")

    assert seen["verdict"]["at"] < seen["ir"]["at"] and seen["diagram"]["at"] < seen["ir"]["at"], seen
    for early in ("verdict", "diagram"):
        assert seen[early]["state"] == "running", seen  # the run goes on: timing, then the IR
        assert "compiling IR…" in seen[early]["ir"], seen
    assert "measuring…" in seen["verdict"]["timings"], seen
    assert seen["ir"]["at"] <= seen["result"]["at"]
    assert page.get_attribute("#status-line", "data-state") == "ok"
    page.wait_for_selector("#ir .ir-stage.active")
    assert "compiling IR…" not in page.text_content("#ir")
    assert "measuring…" not in page.text_content("#timings")


def test_stop_between_parts_ends_the_run(app, server, page):
    load(page, server, app, slow_spec())
    page.click("#run-button")
    page.wait_for_selector("#results .summary-icon.ok", timeout=RUN_TIMEOUT_MS)
    assert "compiling IR…" in page.text_content("#ir")  # the verdict is in, the IR still to come
    page.click("#stop-button")
    page.wait_for_function("document.querySelector('#status-line').dataset.state === 'error'", timeout=5000)
    assert page.text_content("#error-card .phase") == "stopped"
    assert "compiling IR…" not in page.text_content("#ir")  # the result answered it: the run stopped
    page.screenshot(path=f"{SHOTS}/stream-stopped-between-parts.png")
