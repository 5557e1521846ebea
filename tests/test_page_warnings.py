"""The warnings a run raised show in the page's Results (1280x720): each with its line, a link that
shows the line in the editor, and how often it was raised."""
import pytest

from tests.support.browser import page_without_errors
from tests.support.kernels import VECTOR_ADD, vector_add_spec
from tests.test_browser import open_playground, run_and_wait

SHOTS = "/tmp/shots"
DEPRECATED_VIEW = VECTOR_ADD.replace("    x = tl.load(x_ptr + offs, mask=mask)\n",
                                     "    x = tl.view(tl.load(x_ptr + offs, mask=mask), (BLOCK_SIZE,))\n")
VIEW_LINE = DEPRECATED_VIEW.splitlines().index("    x = tl.view(tl.load(x_ptr + offs, mask=mask), (BLOCK_SIZE,))") + 1


@pytest.mark.browser
def test_a_deprecation_the_kernel_raised_shows_in_results_at_its_line_with_its_count(browser, live_server):
    with page_without_errors(browser, width=1280, height=720) as page:
        open_playground(page, live_server + "/")
        page.evaluate("(spec) => window.playground.setSpec(spec)", vector_add_spec(n=4000, source=DEPRECATED_VIEW))
        assert run_and_wait(page) == "ok"
        warning = page.locator("#results .warnings li")
        assert warning.count() == 1
        text = warning.inner_text()
        assert f"line {VIEW_LINE}" in text and "UserWarning" in text and "view is deprecated" in text
        assert "(4 times)" in text  # once per program: 4 programs of 1024
        page.screenshot(path=f"{SHOTS}/warnings-results-1280x720.png")
        warning.get_by_role("button", name=f"line {VIEW_LINE}").click()
        page.wait_for_function(f"""() => {{ const v = window.playground.editorView;
            return v.state.doc.lineAt(v.state.selection.main.head).number === {VIEW_LINE}; }}""")
