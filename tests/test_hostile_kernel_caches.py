"""The compiled kernels a run is lent and leaves, attacked from inside runs: links planted in an
owner's kernel cache, sparse or foreign entries collected back, another owner's kernels, the
gallery's shared kernels written, replaced or poisoned, and a teacher's puzzle planting in the
student's cache through a graded run. Each asserts what the next run finds, the server alive and
the next normal run working (tests/support/hostile.py, tests/support/hostile_targets.py)."""
import hashlib
import json
import os
import time

import pytest

from app.gallery import load_example
from tests.support import attacks as H
from tests.support.hostile import (ENOENT, EPERM, SECRET, Denied, Expect, Returns, check, hostile_spec, owner_of,
                                   puzzle_body, result_summary, wait_for)
from tests.support.hostile_targets import hostile, listeners, survives  # noqa: F401  (fixtures)
from tests.support.kernels import VECTOR_ADD, vector_add_spec
from tests.support.tritons import kept_dir

pytestmark = pytest.mark.integration  # every attack runs in a real jailed run process


def links_planted_in_the_kernel_cache_are_not_followed(h):
    """An owner's run plants links in its kernel cache (to /etc/passwd, to a file and a directory
    it cannot see); that owner's next run finds no link and none of their contents."""
    context = h.context()
    secret_file = os.path.join(os.path.dirname(h.database), context["marker"] + ".txt")
    with open(secret_file, "w") as f:
        f.write(SECRET)
    context["secret_file"] = secret_file
    owner = h.target.new_client()
    try:
        first = h.target.run(hostile_spec(H.PLANT_LINKS, context), owner)
        assert first["status"] == "ok", result_summary(first)
        second = h.target.run(hostile_spec(H.LOOK_FOR_LINKS, context), owner)
        check(second, Expect({"cache": Returns({"links": [], "leaks": []})}), context)
        kept = [os.path.join(top, name) for top, dirs, files in os.walk(os.path.join(h.run_root, "kernel-caches"))
                for name in dirs + files]
        assert not [p for p in kept if os.path.islink(p)], f"links kept in the owners' caches: {kept}"
        for path in kept:
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    assert SECRET.encode() not in f.read(), f"{path} holds the hidden file's contents"
    finally:
        os.unlink(secret_file)


def another_owners_kernels_are_out_of_reach(h):
    alice, bob = h.target.new_client(), h.target.new_client()
    compiled = h.target.run({**vector_add_spec(n=1024, block=256), "options": {"ir": True}}, alice)
    assert compiled["status"] == "ok", result_summary(compiled)
    root = kept_dir(h.run_root, "kernel-caches")
    caches = wait_for(lambda: os.path.isdir(root) and [os.path.join(root, n) for n in os.listdir(root)
                                                       if not n.startswith(".")], 10)  # kept just after the reply
    assert caches, "the owner's run left no compiled kernel to look for"
    context = h.context(kernel_caches=caches, kernel_cache_root=root)
    look = ("attempt('visible', lambda: [p for p in CONTEXT['kernel_caches'] if os.path.exists(p)])\n"
            "attempt('listing', os.listdir, CONTEXT['kernel_cache_root'])")
    result = h.target.run(hostile_spec(look, context), bob)
    check(result, Expect({"visible": Returns([]), "listing": ENOENT}), context)


def sparse_entries_are_not_collected_dense(h):
    """A run plants 64 cache entries of a 60 MB sparse file each (nothing on its tmpfs, 3.8 GB copied
    dense) and entries of files no Triton entry holds: none reaches its owner's cache on the host."""
    from sandbox.worker.kernel_cache import tree_bytes
    mallory = h.target.new_client()
    context = h.context()
    result = h.target.run(hostile_spec(H.SPARSE_CACHE, context), mallory)
    check(result, Expect({"sparse": Returns("planted"), "foreign": Returns("planted")}), context)
    root = os.path.join(h.run_root, "kernel-caches")
    time.sleep(0.5)  # collected just after the reply
    planted = [os.path.join(top, d) for top, dirs, _ in os.walk(root) for d in dirs
               if d.startswith(("SPARSE", "FOREIGN"))]
    assert not planted, f"collected into the host's kernel caches: {planted[:4]}"
    assert tree_bytes(root) < 256 << 20, f"the kernel caches hold {tree_bytes(root) >> 20} MB"


def file_digests(directory):
    found = {}
    for top, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(top, name)
            if name != ".lock" and not os.path.islink(path):
                with open(path, "rb") as f:
                    found[os.path.relpath(path, directory)] = hashlib.sha256(f.read()).hexdigest()
    return found


def shared_kernels_written_replaced_or_poisoned(h):
    """A run tries to change the gallery's compiled kernels for every later run: in place (write,
    add, create an entry, replace, remove, chmod, remount) and through its own cache (the same key,
    every file and the group poisoned). Each write is refused, the shared files are unchanged, and both the next owner's run of the example and the attacker's own run
    compile what the worker compiled."""
    shared = kept_dir(h.run_root, "shared-kernels")
    key = next(k for k in sorted(os.listdir(shared)) if os.path.exists(os.path.join(shared, k, "add_kernel.cubin")))
    example = load_example("vector_add")["spec"]
    before = h.target.run(example, h.target.new_client())
    assert before["status"] == "ok" and "error" not in before["ir"], result_summary(before)
    digests = file_digests(shared)
    context = h.context(shared_key=key, shared_file="add_kernel.cubin", other_file="add_kernel.ptx",
                        shared_group="add_kernel.json", shared_host_path=shared)
    attacker = h.target.new_client()
    result = h.target.run(hostile_spec(H.SHARED_KERNELS, context), attacker)
    erofs = Denied("EROFS")
    # Opening a file of another uid for writing fails on its permissions before the mount's read-only
    # flag is looked at; everything that changes the directory meets the read-only bind.
    check(result, Expect({"lent": Returns("sandbox.worker.shared_kernels:SharedFirstCache"), "overwrite": Denied("EACCES"),
                          "add_file": erofs, "new_entry": erofs, "replace": erofs, "unlink": erofs, "chmod": erofs,
                          "remount": EPERM, "host_path": ENOENT,
                          "poison_own_cache": Returns(lambda names: "add_kernel.cubin" in names, "poisoned its own copy")}),
          context)
    assert file_digests(shared) == digests, "the shared kernels changed"
    for who in (h.target.new_client(), attacker):  # the attacker's owner cache now holds the poisoned entry
        after = h.target.run(example, who)
        assert after["status"] == "ok" and after["ir"].get("ptx") == before["ir"]["ptx"], result_summary(after)
        assert after["ir"].get("sass") == before["ir"]["sass"]


def graded_run_is_lent_no_kernels(h):
    """A teacher's puzzle runs its expressions in the student's graded run: that run is lent
    none of the student's compiled kernels, and nothing it leaves in its cache reaches the student's
    next ordinary run or the student's cache on the host."""
    import base64
    from app.owners import key as owner_key
    app, student = h.target.app, h.target.new_client()
    compiled = h.target.run({**vector_add_spec(n=1024, block=256), "options": {"ir": True}}, student)
    assert compiled["status"] == "ok", result_summary(compiled)
    own_cache = os.path.join(kept_dir(h.run_root, "kernel-caches"), owner_key(owner_of(student)))
    theirs = set(wait_for(lambda: os.path.isdir(own_cache) and os.listdir(own_cache), 10) or ())
    assert theirs, "the student's run left no compiled kernel to be lent"
    context = h.context()
    planted = base64.b32encode(hashlib.sha256(context["marker"].encode()).digest()).decode().rstrip("=")
    plant = f"exec({H.GRADED_PLANT.replace('KEY', repr(planted))!r}) or torch.randn(N)"
    body = json.loads(puzzle_body(inputs={"x": plant, "y": "torch.randn(N)", "out": "torch.empty(N)"}))
    body["title"] = "Plant " + context["marker"]
    made = app.test_client().post("/api/puzzles", json=body)
    assert made.status_code == 200, made.get_data(as_text=True)
    spec = app.test_client().get(f"/api/puzzles/{made.json['name']}").json["spec"]
    graded = h.target.run({**spec, "source": VECTOR_ADD}, student)
    assert graded.get("puzzle"), result_summary(graded)
    seen = [json.loads(line.split(" ", 1)[1]) for line in graded["stdout"].splitlines()
            if line.startswith("GRADED-FINDINGS ")]
    assert seen and all(set(names) <= {planted} for names in seen), f"the graded run was lent {seen}"
    after = h.target.run(hostile_spec(H.LIST_OWN_CACHE, context), student)
    check(after, Expect({"cache": Returns(lambda names: planted not in names and set(names) >= theirs,
                                          "the student's own kernels, without the planted entry")}), context)
    assert planted not in os.listdir(own_cache), "the planted entry was collected into the student's cache"


SCENARIOS = [
    pytest.param(sparse_entries_are_not_collected_dense, "hostile", id="sparse_files_collected_into_kernel_caches"),
    pytest.param(links_planted_in_the_kernel_cache_are_not_followed, "hostile", id="links_planted_in_the_kernel_cache"),
    pytest.param(another_owners_kernels_are_out_of_reach, "hostile", id="another_owners_compiled_kernels"),
    pytest.param(shared_kernels_written_replaced_or_poisoned, "hostile", id="write_replace_or_poison_the_shared_kernels"),
    pytest.param(graded_run_is_lent_no_kernels, "hostile", id="teacher_puzzle_plants_in_the_students_kernel_cache"),
]


@pytest.mark.parametrize("scenario, target", SCENARIOS)
def test_a_hostile_scenario_is_denied(request, scenario, target):
    survives(request.getfixturevalue(target), scenario)
