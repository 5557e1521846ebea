import copy

import pytest

from sandbox.spec import DEFAULT_OPTIONS, SCRIPT_ONLY_OPTIONS, SpecError, launch_key, normalize
from tests.support.kernels import vector_add_spec


def test_defaults_are_filled_in():
    spec = normalize({k: v for k, v in vector_add_spec().items() if k != "options"})
    assert spec["options"] == {k: v for k, v in DEFAULT_OPTIONS.items() if k not in SCRIPT_ONLY_OPTIONS}
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
    assert served["options"]["num_warps"] == {"default": 4, "choices": [1, 2, 4, 8, 16, 32]}
    assert served["options"]["num_stages"] == {"default": 3, "min": 1, "max": 8}
    assert set(served["options"]) == set(normalize(vector_add_spec())["options"]) | set(SCRIPT_ONLY_OPTIONS)
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
