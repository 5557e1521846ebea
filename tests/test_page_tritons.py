"""Triton versions in a real browser, through a real server with a worker of the default and one of a
second version: the picker beside num_warps and num_stages lists both with their release dates, a
run on the chosen version says so, a kernel using what the chosen version lacks gets the note beside
the picker naming it, and Compare's versions table runs the kernel on each version side by side with
an IR diff between them."""
import pytest

from sandbox import tritons
from tests.support.apps import served
from tests.support.browser import page_without_errors
from tests.support.kernels import vector_add_spec
from tests.support.tritons import app_of_two_versions, atomic_load_spec, newer_and_older, require_extra
from tests.test_browser import RUN_TIMEOUT_MS, open_playground, run_and_wait

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with app_of_two_versions(tmp_path_factory.mktemp("page-tritons")) as app:
        yield app


@pytest.fixture(scope="module")
def server(app):
    with served(app) as url:
        yield url


def picker(page):
    return page.eval_on_selector_all("#opt-triton option", "(options) => options.map((o) => [o.value, o.textContent])")


def test_the_picker_lists_the_versions_and_a_kernel_lacking_in_the_chosen_one_is_noted_beside_it(server, browser):
    newer, older = newer_and_older()
    default = tritons.default_version()
    with page_without_errors(browser, width=1400, height=900) as page:
        open_playground(page, server + "/")
        assert dict(picker(page)) == {default: f"{default} (default)", require_extra(): require_extra()}
        assert page.text_content("#triton-released") == f"released {tritons.RELEASED[default]}"
        page.evaluate("(spec) => window.playground.setSpec(spec)", atomic_load_spec())
        page.select_option("#opt-triton", older)
        assert page.text_content("#triton-released") == f"released {tritons.RELEASED[older]}"
        assert run_and_wait(page) == "error"
        page.wait_for_selector("#triton-note:not([hidden])")
        note = page.text_content("#triton-note")
        assert note.startswith(f"Triton {older} has no tl.atomic_load") and note.endswith(f"). Try {newer}.")
        assert "error-field" in page.get_attribute("#opt-triton", "class")
        page.screenshot(path=f"{SHOTS}/triton-picker-note.png")
        page.select_option("#opt-triton", newer)
        assert run_and_wait(page) == "ok"
        assert page.is_hidden("#triton-note")
        assert page.evaluate("() => window.playground.getSpec().options.triton") == (None if newer == default else newer)
        # A script runs on the version chosen too: the script's picker shows the same choice.
        page.check('input[name="run-mode"][value="script"]')
        assert page.input_value("#script-triton") == newer
        page.select_option("#script-triton", older)
        assert page.input_value("#opt-triton") == older
        assert page.evaluate("() => window.playground.getSpec()") ["options"]["triton"] == (None if older == default else older)


def test_the_versions_comparison_runs_the_kernel_on_each_version_side_by_side(server, browser):
    newer, older = newer_and_older()
    with page_without_errors(browser, width=1400, height=1000) as page:
        open_playground(page, server + "/")
        page.evaluate("(spec) => window.playground.setSpec(spec)", atomic_load_spec(ir=True))
        page.click("#tab-compare")
        page.click("#versions-button")
        page.wait_for_function("!document.querySelector('#versions-button').disabled", timeout=2 * RUN_TIMEOUT_MS)
        verdicts = page.eval_on_selector_all('#versions-table tr[data-row="verdict"] td',
                                             "(cells) => cells.map((c) => [c.dataset.version, c.textContent])")
        verdicts = dict(verdicts)
        assert verdicts[newer].startswith("✓") and verdicts[older].startswith(f"✗ Triton {older} has no tl.atomic_load")
        page.screenshot(path=f"{SHOTS}/triton-versions-lacking.png", full_page=True)
        # A kernel both versions compile: its IR compared, its resources and sizes side by side.
        page.evaluate("(spec) => window.playground.setSpec(spec)", vector_add_spec(n=4096, ir=True))
        page.click("#tab-compare")  # a spec loaded shows its first tab
        page.click("#versions-button")
        page.wait_for_function("!document.querySelector('#versions-button').disabled", timeout=2 * RUN_TIMEOUT_MS)
        cells = dict(page.eval_on_selector_all('#versions-table tr[data-row="ptx"] td',
                                               "(cells) => cells.map((c) => [c.dataset.version, c.textContent])"))
        assert set(cells) == {newer, older} and all("lines" in text for text in cells.values()), cells
        times = page.eval_on_selector_all('#versions-table tr[data-row="time"] td', "(cells) => cells.map((c) => c.textContent)")
        assert all(text.startswith("interpreter: no speed to compare") for text in times)
        page.click('.versions .compare-stages button[data-stage="ptx"]')
        assert page.is_visible("#versions-ir-diff") or page.is_visible("#versions-ir-same")
        assert page.query_selector("#versions-ir-diff .diff-line.add") is not None  # two versions' PTX differ
        page.screenshot(path=f"{SHOTS}/triton-versions.png", full_page=True)
