"""The jail's system calls by name, on any architecture: the numbers sandbox.jail.isolation passes to
syscall(2) are libseccomp's for the machine it runs on (x86-64 and aarch64 number them apart), and
no number is written into the code."""
import ctypes
import os
import re

import pyseccomp
import pytest

from sandbox.jail import isolation

# What the kernel's own tables say, for the two architectures GPU hosts have.
KNOWN = {"x86_64": {"capset": 126, "capget": 125, "pivot_root": 155},
         "aarch64": {"capset": 91, "capget": 90, "pivot_root": 41}}


def called_by_number():
    """The names isolation.py passes to syscall(2); each call must name its syscall, never a number."""
    with open(isolation.__file__) as f:
        source = f.read()
    calls = re.findall(r"libc\.syscall\(([^,]+),", source)
    assert calls, "isolation.py makes no raw system call any more: drop this test"
    names = []
    for argument in calls:
        found = re.fullmatch(r'syscall_number\("(\w+)"\)', argument.strip())
        assert found, f"a system call by a number of its own: syscall({argument}, ...)"
        names.append(found.group(1))
    return names


def test_the_numbers_used_are_libseccomps_for_this_architecture():
    arch = pyseccomp.system_arch()
    for name in called_by_number():
        assert isolation.syscall_number(name) == pyseccomp.resolve_syscall(arch, name), name
    machine = os.uname().machine
    for name, number in KNOWN.get(machine, {}).items():
        assert isolation.syscall_number(name) == number, (machine, name)


def test_the_table_above_is_libseccomps():
    for machine, arch in (("x86_64", pyseccomp.Arch.X86_64), ("aarch64", pyseccomp.Arch.AARCH64)):
        assert {name: pyseccomp.resolve_syscall(arch, name) for name in KNOWN[machine]} == KNOWN[machine]


def test_a_resolved_number_reaches_the_call_it_names():
    """capget by its resolved number answers as capget does: it fills in the kernel's capability
    version (v3, 0x20080522) for a header asking with version 0."""
    header = (ctypes.c_uint32 * 2)(0, 0)
    isolation.libc.syscall(isolation.syscall_number("capget"), header, None)
    assert header[0] == 0x20080522


def test_an_unknown_call_is_a_jail_error_not_a_negative_number():
    with pytest.raises(isolation.JailError, match="no such system call"):
        isolation.syscall_number("no_such_call")


def test_the_namespace_flags_are_pythons_where_python_names_them():
    for name in ("CLONE_NEWNS", "CLONE_NEWPID", "CLONE_NEWNET", "CLONE_NEWUSER", "CLONE_NEWIPC"):
        if hasattr(os, name):
            assert getattr(isolation, name) == getattr(os, name)
    assert isolation.CLONE_NEWPID == 0x20000000 and isolation.CLONE_NEWNS == 0x00020000
