"""A timeline's inputs as an attacker writes them: region markers whose names try to end the string
they become (and run code of their own in the instrumented source), too many regions, and a record
buffer the kernel itself could have scribbled over (it lies in the kernel's own memory)."""
import ast
import gzip
import os

import numpy as np
import pytest

from sandbox.timeline import part, record, regions
from tests.support.kernels import VECTOR_ADD

DATA = os.path.join(os.path.dirname(__file__), "data", "timeline", "layer_norm.rawbuf.gz")


def marked(name):
    return VECTOR_ADD.replace("    x = tl.load(", f"    # region: {name}\n    x = tl.load(").replace(
        "    y = tl.load(", "    # endregion\n    y = tl.load(")


def statements(source):
    return [ast.dump(node) for node in ast.walk(ast.parse(source)) if isinstance(node, ast.stmt)]


@pytest.mark.parametrize("name", ["'); import os; os.system('id'); ('", '"); import os  #', "\\'); x = (1",
                                  "a\") } func.func @evil", "é" * 200, "\x1b[31m\u202e", "{{ config }}"])
def test_a_region_name_is_only_ever_a_name(name):
    instrumented = regions.instrument(marked(name), "add_kernel")
    region, = instrumented.regions
    assert len(region.name) <= regions.MAX_NAME and not regions.NAME_CHARACTERS.search(region.name)
    added = len(statements(instrumented.source)) - len(statements(marked(name)))
    assert added == 3  # the two scope calls and the import of Proton's language: no statement of the name's
    calls = [node for node in ast.walk(ast.parse(instrumented.source)) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr in ("enter_scope", "exit_scope")]
    assert [call.args[0].value for call in calls] == [region.name, region.name]


def test_more_regions_than_a_timeline_times_are_refused():
    many = "\n".join(f"    # region: r{i}\n    z{i} = {i}\n    # endregion" for i in range(regions.MAX_REGIONS + 1))
    source = VECTOR_ADD.replace("    pid = tl.program_id(axis=0)", many + "\n    pid = tl.program_id(axis=0)")
    with pytest.raises(regions.RegionError, match=f"at most {regions.MAX_REGIONS}"):
        regions.instrument(source, "add_kernel")


def scribbled(seed):
    """The recorded buffer with its programs' bytes overwritten at random, header kept."""
    with gzip.open(DATA) as f:
        words = np.frombuffer(f.read(), dtype="<u4").copy()
    rng = np.random.default_rng(seed)
    payload = int(words[3]) // 4
    spots = rng.integers(payload, len(words), size=len(words) // 20)
    words[spots] = rng.integers(0, 2 ** 32, size=len(spots), dtype=np.uint64).astype(np.uint32)
    return words.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_a_scribbled_record_decodes_into_bounded_programs_or_none(seed):
    programs = record.decode(scribbled(seed))
    assert len(programs) <= 264
    for program in programs:
        assert len(program.warps) == 4
        assert all(len(warp) <= 8320 // 8 for warp in program.warps)
    if programs:
        timeline = part.build(programs, [regions.Region(n, [1, 1]) for n in "abc"], [264, 1, 1], 4, 1.98, 132, None)
        for detailed in timeline["programs"]:
            assert all(span[0] < 3 for warp in detailed["warps"] for span in warp)  # unknown scopes left out


def test_a_truncated_or_foreign_record_is_refused_not_misread():
    with gzip.open(DATA) as f:
        raw = f.read()
    with pytest.raises(record.RecordError, match="fewer than its 264 programs need"):
        record.decode(raw[:1000])  # the header promises programs the bytes do not hold
    with pytest.raises(record.RecordError):
        record.decode(raw[:20])
    foreign = bytearray(raw)
    foreign[36:40] = (2).to_bytes(4, "little")  # fewer units recorded than warps: another sampling mode
    with pytest.raises(record.RecordError):
        record.decode(bytes(foreign))
