"""Script mode in a real browser: the launch pane collapses to the program's launches; a click on
one shows its diagram, timings and IR; a launch becomes a form run; an out-of-bounds launch is named
and drawn; share links and embeds of a script run it again."""
import re

import pytest

from tests.support.browser import page_without_errors, set_source
from tests.test_browser import open_playground, run_and_wait, share
from tests.test_script import OVERRUN, program

pytestmark = pytest.mark.browser
SHOTS = "/tmp/shots"
AXPY_CLAMP = program("axpy_clamp.py")


@pytest.fixture
def page(browser):
    with page_without_errors(browser, width=1440, height=900) as page:
        yield page


def script_page(page, url, source):
    open_playground(page, url)
    page.check('input[name="run-mode"][value="script"]')
    set_source(page, source)


def launch_rows(page):
    return page.eval_on_selector_all("#launches-table tbody tr", """rows => rows.map(row => ({
        cells: [...row.cells].slice(0, 6).map(cell => cell.textContent), selected: row.classList.contains('selected')}))""")


def diagram_counter(page):
    page.click("[data-tab=diagram]")
    page.wait_for_selector(".diagram-grid-plot .nsewdrag")
    return page.inner_text("#diagram")


def test_a_program_lists_its_launches_and_a_click_shows_one(page, live_server):
    script_page(page, live_server, AXPY_CLAMP)
    assert page.is_visible("#script-body") and not page.is_visible("#grid-input")
    assert page.evaluate("window.playground.getSpec()")["mode"] == "script"
    assert page.text_content("#editor-title") == "program.py"
    assert run_and_wait(page) == "ok"
    rows = launch_rows(page)
    assert [row["cells"][:4] for row in rows] == [["0", "axpy_clamp_kernel", "24", "(59)"],
                                                  ["1", "axpy_clamp_kernel", "24", "(16)"]]
    assert [row["cells"][5] for row in rows] == ["✓ in bounds"] * 2 and rows[0]["selected"]
    # The list is the program's own report (result.claims), and the page says so.
    assert page.inner_text("#launches-claim") == "Reported by the program; not checked by the server."
    assert page.inner_text("#launches-server-check") == ("The server checked launch 0 again, without the program: "
                                                         "✓ in bounds.")
    assert "Launch grid (59, 1, 1): 59 programs" in diagram_counter(page)
    page.screenshot(path=f"{SHOTS}/script-launches.png")
    page.click("[data-tab=results]")
    assert "axpy-clamp-throughput" in page.inner_text("#results")  # the table the program printed
    page.screenshot(path=f"{SHOTS}/script-results.png")

    pick_launch(page, 1)
    assert page.evaluate("window.playground.getSpec()")["options"]["launch"] == 1
    assert "Launch grid (16, 1, 1): 16 programs" in diagram_counter(page)
    page.click("[data-tab=ir]")
    page.wait_for_function("document.querySelector('#ir').textContent.includes('tt.func')")
    page.click("[data-tab=timings]")
    assert "interpreter" in page.inner_text("#timings").lower()
    # the plot the program's perf_report would draw, at the point it ran
    page.wait_for_selector(".benchmark-chart[data-benchmark='axpy-clamp-throughput'] .js-plotly-plot")
    assert "1 of its 12 points" in page.inner_text(".benchmark-chart")
    page.screenshot(path=f"{SHOTS}/script-launch-1.png")
    page.check('input[name="run-mode"][value="form"]')  # back to the form: a form run's spec again
    spec = page.evaluate("window.playground.getSpec()")
    assert "mode" not in spec and "launch" not in spec["options"] and spec["kernel"] == "axpy_clamp_kernel"
    assert page.is_visible("#grid-input") and not page.is_visible("#script-body")


def test_an_out_of_bounds_launch_is_named_and_drawn(page, live_server):
    source = OVERRUN.replace("CALL", "scale(x, out)")
    script_page(page, live_server, source)
    assert run_and_wait(page) == "error"
    rows = launch_rows(page)
    assert [row["cells"][5] for row in rows] == ["✓ in bounds"] * 3 + ["✗ out of bounds"] and rows[3]["selected"]
    results = page.inner_text("#results")
    assert "launch 3 (scale_kernel[7,], called at line 15)" in results and "out_ptr" in results
    assert "out of bounds" in diagram_counter(page).lower()
    page.screenshot(path=f"{SHOTS}/script-out-of-bounds.png")


def test_a_launch_becomes_a_form_run(page, live_server):
    script_page(page, live_server, AXPY_CLAMP)
    assert run_and_wait(page) == "ok"
    asked = []
    page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.click("#launches-table tbody tr[data-index='1'] .to-form")
    page.wait_for_function("!document.querySelector('#launch').classList.contains('script')")
    spec = page.evaluate("window.playground.getSpec()")
    assert spec["kernel"] == "axpy_clamp_kernel" and spec["grid"] == "(16,)" and "mode" not in spec
    # the program's values: its draws since torch.manual_seed(0), again, in its order
    assert spec["options"]["seed"] == 0 and spec["inputs"]["x"] == (
        "(torch.randn((30000,), dtype=torch.float32), torch.randn((30000,), dtype=torch.float32), "
        "torch.randn((8192,), dtype=torch.float32))[-1]")
    assert "x, y: drawn again from seed 0" in page.inner_text(".toast.info")  # said to the person
    page.screenshot(path=f"{SHOTS}/script-form-values.png")
    assert "throughput.run" not in spec["source"]  # the program's definitions, not its launches
    assert page.input_value("#grid-input") == "(16,)"
    assert asked and "launch 1 (axpy_clamp_kernel)" in asked[0]  # the program in the editor is replaced: asked first
    assert run_and_wait(page) == "ok"
    assert "Launch grid (16, 1, 1): 16 programs" in diagram_counter(page)
    page.screenshot(path=f"{SHOTS}/script-to-form.png")


def pick_launch(page, index):
    page.click(f"#launches-table tbody tr[data-index='{index}']")
    page.wait_for_function(f"document.querySelector('#launches-table tbody tr.selected')?.dataset.index === '{index}'",
                           timeout=60000)
    page.wait_for_function("document.querySelector('#status-line').dataset.state === 'ok'", timeout=60000)


def test_a_shared_script_and_its_embed_run_it_again(page, live_server):
    script_page(page, live_server, AXPY_CLAMP)
    assert run_and_wait(page) == "ok"
    pick_launch(page, 1)
    url = share(page)
    open_playground(page, url)
    assert page.is_checked('input[name="run-mode"][value="script"]')
    page.wait_for_timeout(600)  # the editor's text settles (source-changed) before the run
    assert run_and_wait(page, lambda page: page.click(".link-prompt button")) == "ok"
    rows = launch_rows(page)
    assert len(rows) == 2 and rows[1]["selected"]  # the launch it was shared with
    open_playground(page, url + "?embed=1")
    assert run_and_wait(page) == "ok"
    page.click("[data-tab=diagram]")
    page.wait_for_selector(".diagram-grid-plot .nsewdrag")
    page.screenshot(path=f"{SHOTS}/script-embed.png")


def click_costs(page):
    return page.eval_on_selector_all("#launches-table tbody tr", "rows => rows.map(row => row.cells[6].textContent)")


def test_the_list_says_what_a_click_costs_before_it_costs_it(page, live_server):
    """A launch whose inputs and run were kept is shown as the program ran it (in the interpreter: the
    program prints nothing, and the launch does not run again); once the program is edited, a click
    runs it whole again, and the list says so, with how long the program took, before the click."""
    script_page(page, live_server, AXPY_CLAMP)
    assert run_and_wait(page) == "ok"
    assert "largest gap from torch" in page.inner_text("#results")  # the program's own print
    assert click_costs(page) == ["shown", "replay"]
    as_ran = ("as the program ran it (its trace and time, kept from that run): neither the program nor the launch "
              "runs again.")
    assert page.inner_text("#launches-cost") == f"A click on another launch shows it {as_ran}"
    page.hover("#launches-table tbody tr[data-index='1']")
    assert page.inner_text("#launches-cost") == f"A click on launch 1 shows it {as_ran}"
    page.screenshot(path=f"{SHOTS}/script-click-replays.png")
    page.uncheck("#script-trace")  # a launch's kept run is its trace: without one, a click launches it again
    page.hover("#launches-table tbody tr[data-index='1']")
    assert re.fullmatch(r"A click on launch 1 replays this launch alone \(it took [\d.]+ ms in the program\), from the "
                        r"inputs it received: the program does not run again\.", page.inner_text("#launches-cost"))
    page.check("#script-trace")

    pick_launch(page, 1)
    page.click("[data-tab=results]")
    assert "largest gap from torch" not in page.inner_text("#results")  # replayed: the program did not run
    assert "Launch 1 as the program ran it" in page.inner_text("#results")
    assert click_costs(page) == ["replay", "shown"]

    set_source(page, AXPY_CLAMP + "\n# an edit\n")
    page.wait_for_function("document.querySelector('#launches-table tbody tr[data-index=\"0\"]').cells[6]"
                           ".textContent.startsWith('re-run')")
    took = page.eval_on_selector("#launches-table tbody tr[data-index='0']", "row => row.cells[6].textContent")
    assert re.fullmatch(r"re-run · \d+(\.\d)? m?s", took), took
    page.hover("#launches-table tbody tr[data-index='0']")
    said = page.inner_text("#launches-cost")
    assert said.startswith(f"A click on launch 0 re-runs the whole program (took {took.split(' · ')[1]}): "
                           "the program changed since its launches were listed"), said
    page.screenshot(path=f"{SHOTS}/script-click-reruns.png")
    pick_launch(page, 0)
    assert "largest gap from torch" in page.inner_text("#results")  # as said: the whole program ran
