import builtins
import copy
import keyword

import pytest

from sandbox import result
from sandbox.spec import DEFAULT_OPTIONS, SCRIPT_ONLY_OPTIONS, SpecError, launch_key, normalize, schema
from tests.support.kernels import vector_add_spec


def test_defaults_are_filled_in():
    spec = normalize({k: v for k, v in vector_add_spec().items() if k != "options"})
    # options.triton unset stays unset: a spec naming no version is as it was before there were versions
    assert spec["options"] == {k: v for k, v in DEFAULT_OPTIONS.items() if k not in (*SCRIPT_ONLY_OPTIONS, "triton")}
    assert spec["version"] == 1


@pytest.mark.parametrize("change, names", [
    ({"source": ""}, "source"),
    ({"kernel": "not a name"}, "kernel"),
    ({"grid": ""}, "grid"),
    ({"reference": {"nothere": "x"}}, "nothere"),
    ({"inputs": {"x": ""}}, "input 'x'"),
    ({"options": {"num_warps": 0}}, "num_warps"),
    ({"options": {"num_warps": 3}}, "options.num_warps must be a power of 2"),
    ({"options": {"device": "tpu"}}, "device"),
    ({"options": {"warps": 4}}, "warps"),
    ({"version": 2}, "version"),
])
def test_malformed_specs_name_the_field(change, names):
    with pytest.raises(SpecError, match=names):
        normalize({**vector_add_spec(), **change})


@pytest.mark.parametrize("change, words", [
    ({"args": {"n": float("nan")}}, "args.n must be a finite number, not NaN"),
    ({"options": {"flops": float("inf")}}, "options.flops must be a finite number, not Infinity"),
    ({"options": {"atol": float("-inf")}}, "options.atol must be a finite number, not -Infinity"),
    ({"options": {"flops": [1.0, [2, float("nan")]]}}, r"options.flops\[1\]\[1\] must be a finite number, not NaN"),
])
def test_nan_and_infinity_are_refused_anywhere_naming_the_field(change, words):
    # JSON has none, but Python's parsers accept them; a worker could not be sent one.
    with pytest.raises(SpecError, match=words):
        normalize({**vector_add_spec(), **change})


def test_every_power_of_two_num_warps_passes():
    for warps in (1, 2, 4, 8, 16, 32):
        assert normalize({**vector_add_spec(), "options": {"num_warps": warps}})["options"]["num_warps"] == warps


def test_not_an_object():
    with pytest.raises(SpecError, match="JSON object"):
        normalize(["source"])


@pytest.mark.parametrize("options, words", [
    ({"trace": "yes"}, "options.trace must be true or false"),
    ({"atol": -1}, "options.atol must be a non-negative number"),
    ({"flops": [1]}, "options.flops must be a number or an expression"),
    ({"arch": 90}, "options.arch must be a string"),
])
def test_option_types_are_checked_with_the_options_name(options, words):
    with pytest.raises(SpecError, match=words):
        normalize({**vector_add_spec(), "options": options})


def test_a_launch_key_changes_with_what_moves_an_address_and_nothing_else(spec):
    key = launch_key(normalize(spec))
    presentational = copy.deepcopy(spec)
    presentational["options"].update({"bench": False, "trace": False, "num_warps": 8, "atol": 1.0})
    assert launch_key(normalize(presentational)) == key
    for change in ({"grid": "(1,)"}, {"args": {**spec["args"], "BLOCK_SIZE": 512}},
                   {"inputs": {**spec["inputs"], "x": "torch.ones(4096)"}}, {"source": spec["source"] + "\n# edit"},
                   {"options": {**spec["options"], "seed": 1}}):
        assert launch_key(normalize({**spec, **change})) != key, change


def test_the_spec_schema_is_served_from_its_one_definition(client):
    served = client.get("/api/spec").get_json()
    assert served["options"]["num_warps"] == {"default": 4, "choices": [1, 2, 4, 8, 16, 32], "modes": ["form", "script"]}
    assert served["options"]["num_stages"] == {"default": 3, "min": 1, "max": 8, "modes": ["form", "script"]}
    assert served["empty_result"] == result.new() and served["failure_words"] == result.FAILURE_WORDS
    assert set(served["options"]) == set(normalize(vector_add_spec())["options"]) | {*SCRIPT_ONLY_OPTIONS, "triton"}
    page = client.get("/").get_data(as_text=True)
    assert '"spec_schema"' in page and '"choices": [1, 2, 4, 8, 16, 32]' in page


def test_a_script_takes_its_launches_from_the_program_and_a_form_no_script_option():
    spec = normalize({"mode": "script", "source": "print(1)\n", "options": {"launch": 2, "benchmarks": "all"}})
    assert spec["mode"] == "script" and "kernel" not in spec and spec["options"]["launch"] == 2
    for raw, field in [({"mode": "script", "source": "x = 1\n", "kernel": "k"}, "kernel"),
                       ({"mode": "script", "source": "x = 1\n", "options": {"launch": -1}}, "options.launch"),
                       ({"mode": "script", "source": "x = 1\n", "options": {"benchmarks": "some"}}, "options.benchmarks"),
                       ({"mode": "script", "source": "x = 1\n", "options": {"check": False}}, "options.check"),
                       ({"mode": "batch", "source": "x = 1\n"}, "mode"),
                       ({**vector_add_spec(), "options": {"launch": 0}}, "options.launch")]:
        with pytest.raises(SpecError) as caught:
            normalize(raw)
        assert caught.value.field == field, raw
    assert "mode" not in normalize({**vector_add_spec(), "mode": "form"})  # a form spec is as it always was


def test_each_option_says_which_modes_take_it_as_normalize_holds_them():
    """A spec of each mode keeps exactly the options the schema says that mode takes: an option outside
    its mode, given a value other than its default, is refused."""
    options = schema()["options"]
    for mode, base in (("form", vector_add_spec()), ("script", {"mode": "script", "source": "print(1)\n"})):
        for name, rule in options.items():
            other = {"launch": 1, "benchmarks": "all", "puzzle": "p", "sweep": {"num_warps": [2, 4]}, "step_pid": [0],
                     "check": False, "flops": 2, "atol": 0.5, "rtol": 0.5}.get(name)
            if other is None:
                continue
            try:
                normalize({**base, "options": {name: other}})
                taken = True
            except SpecError:
                taken = False
            assert taken == (mode in rule["modes"]), (mode, name)


def test_the_expression_names_served_are_those_an_expression_sees():
    """What the page lets an expression read is what a run gives it: the modules under their names,
    `meta`, Python's builtins and keywords; nothing else (numpy is not there)."""
    import types
    from sandbox.launch.build import expression_namespace
    namespace = expression_namespace(types.ModuleType("kernel"))
    assert {name: module.__name__ for name, module in namespace.items()} == {
        "torch": "torch", "triton": "triton", "tl": "triton.language", "math": "math"}
    names = set(schema()["expression_names"])
    python = set(vars(builtins)) | set(keyword.kwlist) | set(keyword.softkwlist)
    assert names - python == set(namespace) | {"meta"}
    assert {"divmod", "hex", "lambda", "None"} <= names and "numpy" not in names
