"""Per-owner kernel caches: what one owner's runs compiled reaches that owner's later runs only."""
import os

from sandbox.launch.ir import compile_ir
from sandbox.worker.kernel_cache import KernelCaches
from tests.support.kernels import VECTOR_ADD
from tests.test_ir import vector_add_args, write

ALICE, BOB = "a1" * 16, "b2" * 16


def compile_into(cache_dir, kernel_path, monkeypatch):
    """What a run does: compile for a GPU target with Triton's cache in its scratch dir."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache_dir))
    compile_ir(kernel_path, "add_kernel", vector_add_args(), num_warps=4, num_stages=3, arch="sm90")


def inodes(directory):
    return {os.path.join(os.path.relpath(root, directory), name): os.stat(os.path.join(root, name)).st_ino
            for root, _, names in os.walk(directory) for name in names}


def test_an_owners_next_run_finds_its_kernels_compiled_and_another_owner_does_not(tmp_path, monkeypatch):
    caches = KernelCaches(str(tmp_path / "caches"))
    kernel = write(tmp_path, VECTOR_ADD)
    first, second, other = (tmp_path / name for name in ("run-1", "run-2", "run-3"))
    for run in (first, second, other):
        run.mkdir()
    compile_into(first, kernel, monkeypatch)
    assert caches.collect(ALICE, str(first)) >= 1

    assert caches.lend(ALICE, str(second)) >= 1
    lent = inodes(second)
    compile_into(second, kernel, monkeypatch)
    # A hit: Triton rewrote nothing (a miss replaces files; a stale group file would make one).
    assert inodes(second) == lent
    assert any(name.endswith(".cubin") for name in lent)

    assert caches.lend(BOB, str(other)) == 0 and os.listdir(other) == []


def test_only_whole_entries_of_plain_files_are_collected(tmp_path):
    caches = KernelCaches(str(tmp_path / "caches"))
    run = tmp_path / "run"
    (run / "GOODKEY").mkdir(parents=True)
    (run / "GOODKEY" / "add_kernel.cubin").write_bytes(b"\0")
    (run / "LINKKEY").mkdir()
    (run / "LINKKEY" / "add_kernel.cubin").symlink_to("/etc/passwd")
    (run / "tmp.pid_1_x").mkdir()
    (run / "ESCAPE").symlink_to(tmp_path)
    assert caches.collect(ALICE, str(run)) == 1
    assert os.listdir(tmp_path / "caches" / ALICE) == ["GOODKEY"]
    assert caches.collect("../" + BOB, str(run)) == 0  # owners are digests, never paths


def test_an_owner_keeps_only_its_most_recent_entries(tmp_path):
    caches = KernelCaches(str(tmp_path / "caches"), max_entries=2)
    for i in range(3):
        run = tmp_path / f"run-{i}"
        (run / f"KEY{i}").mkdir(parents=True)
        (run / f"KEY{i}" / "k.json").write_text("{}")
        os.utime(run / f"KEY{i}", (i, i))
        caches.collect(ALICE, str(run))
    assert sorted(os.listdir(tmp_path / "caches" / ALICE)) == ["KEY1", "KEY2"]


def sparse(path, size):
    with open(path, "wb") as f:
        f.truncate(size)  # no block allocated: 0 bytes on the run's tmpfs, `size` once copied dense


def test_an_entry_is_counted_in_apparent_size_so_a_sparse_file_is_refused(tmp_path):
    caches = KernelCaches(str(tmp_path / "caches"), max_entry_bytes=1 << 20)
    run = tmp_path / "run"
    (run / "SPARSE").mkdir(parents=True)
    sparse(run / "SPARSE" / "add_kernel.cubin", 1 << 30)
    (run / "SMALL").mkdir()
    (run / "SMALL" / "add_kernel.cubin").write_bytes(b"\0" * 1000)
    assert caches.collect(ALICE, str(run)) == 1
    assert os.listdir(tmp_path / "caches" / ALICE) == ["SMALL"]


def test_only_files_a_triton_entry_holds_are_collected(tmp_path):
    caches = KernelCaches(str(tmp_path / "caches"))
    run = tmp_path / "run"
    for key, name in (("IR", "k.ttgir"), ("BIN", "k.cubin"), ("LAUNCHER", "__triton_launcher.so"),
                      ("DATA", "payload.bin"), ("NOEXT", "k")):
        (run / key).mkdir(parents=True)
        (run / key / name).write_text("x")
    caches.collect(ALICE, str(run))
    assert sorted(os.listdir(tmp_path / "caches" / ALICE)) == ["BIN", "IR", "LAUNCHER"]


def test_an_owner_and_the_whole_directory_are_capped_in_bytes(tmp_path):
    caches = KernelCaches(str(tmp_path / "caches"), max_bytes=64 << 10, max_entry_bytes=16 << 10)
    assert caches.max_owner_bytes == 16 << 10  # an owner's share: a sixteenth, an entry at least
    run = tmp_path / "run"
    for i in range(4):
        (run / f"KEY{i}").mkdir(parents=True)
        (run / f"KEY{i}" / "k.cubin").write_bytes(b"\1" * (6 << 10))
    assert caches.collect(ALICE, str(run)) == 2  # 12 KB of 16: a third entry would pass the owner's cap
    owners = [f"{i:02x}" * 16 for i in range(12)]
    for i, owner in enumerate(owners):
        caches.collect(owner, str(run))
        os.utime(tmp_path / "caches" / owner, (1000 + i, 1000 + i))
    kept = [o for o in os.listdir(tmp_path / "caches") if not o.startswith(".")]
    total = sum(os.path.getsize(os.path.join(top, n)) for top, _, names in os.walk(tmp_path / "caches")
                for n in names if ".locks" not in top)
    assert total <= 64 << 10 and owners[-1] in kept and owners[0] not in kept
