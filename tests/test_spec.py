import pytest

from sandbox.spec import DEFAULT_OPTIONS, SpecError, normalize
from tests.conftest import vector_add_spec


def test_defaults_are_filled_in():
    spec = normalize({k: v for k, v in vector_add_spec().items() if k != "options"})
    assert spec["options"] == DEFAULT_OPTIONS
    assert spec["version"] == 1


@pytest.mark.parametrize("change, names", [
    ({"source": ""}, "source"),
    ({"kernel": "not a name"}, "kernel"),
    ({"grid": ""}, "grid"),
    ({"reference": {"nothere": "x"}}, "nothere"),
    ({"inputs": {"x": ""}}, "input 'x'"),
    ({"options": {"num_warps": 0}}, "num_warps"),
    ({"options": {"device": "tpu"}}, "device"),
    ({"options": {"warps": 4}}, "warps"),
    ({"version": 2}, "version"),
])
def test_malformed_specs_name_the_field(change, names):
    with pytest.raises(SpecError, match=names):
        normalize({**vector_add_spec(), **change})


def test_not_an_object():
    with pytest.raises(SpecError, match="JSON object"):
        normalize(["source"])
