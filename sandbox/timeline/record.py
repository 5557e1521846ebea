"""Proton's intra-kernel record, decoded: what each program (CTA) of an instrumented launch wrote.

The host buffer Proton's instrumentation hook fills (`InstrumentationHook.host_buffer`, format
version 1, as Triton 3.6 writes it): a header, then one fixed-size block of scratch per program:

    header  u32 version, header offset, header size, payload offset, payload size, device type,
            programs, warps, scratch bytes per program, units recorded; then the units' ids
    program u32 0xDEADBEEF, program id (linear: x fastest), SM id, bytes of records;
            u64 globaltimer (ns) at its start, before and after its final write-back;
            u32 words written per unit; then per unit an equal share of the records
    record  u32 tag (bit 31: end; bits 23-30: scope id; bits 0-10: the clock's high bits), u32 clock's low bits

A unit's share is circular: past its size the oldest records were overwritten (`dropped`).
"""
from dataclasses import dataclass, field

import numpy as np

VERSION = 1
PREAMBLE = 0xDEADBEEF
HEADER_WORDS = 10
PROGRAM_WORDS = 10  # preamble, id, SM, size, three u64 times


class RecordError(ValueError):
    """The buffer is not the record this decoder reads (another Proton version)."""


@dataclass
class Program:
    block: int            # linear program id
    sm: int
    start_ns: int         # globaltimer at the program's start
    end_ns: int           # globaltimer before its records were written back
    warps: list = field(default_factory=list)  # per unit: [(scope id, start cycle, end cycle)], in order
    dropped: int = 0      # records lost to the unit's buffer size


def decode(buffer):
    """[Program] from the bytes of Proton's host buffer."""
    words = np.frombuffer(buffer, dtype="<u4")
    if len(words) < HEADER_WORDS:
        raise RecordError("the record is shorter than its header")
    version, _, header_bytes, payload_offset, _, _, blocks, units, scratch, recorded = (int(w) for w in words[:10])
    if version != VERSION or header_bytes != 4 * (HEADER_WORDS + recorded) or recorded != units:
        raise RecordError(f"unknown record layout (version {version}, {recorded} of {units} units recorded)")
    if payload_offset + blocks * scratch > len(buffer) or scratch < 4 * (PROGRAM_WORDS + units):
        raise RecordError(f"the record holds {len(buffer):,} bytes, fewer than its {blocks:,} programs need")
    programs = []
    for index in range(blocks):
        start = (payload_offset + index * scratch) // 4
        program = decode_program(words[start:start + scratch // 4], units)
        if program is not None:
            programs.append(program)
    return programs


def decode_program(words, units):
    if len(words) < PROGRAM_WORDS + units or int(words[0]) != PREAMBLE:
        return None  # a program that never ran its epilogue (the launch failed): nothing to read
    block, sm, size = int(words[1]), int(words[2]), int(words[3])
    times = words[4:10].view("<u8")
    program = Program(block, sm, int(times[0]), int(times[1]))
    counts = words[PROGRAM_WORDS:PROGRAM_WORDS + units]
    share = size // units // 4  # words per unit
    first = PROGRAM_WORDS + units
    for unit in range(units):
        records = words[first + unit * share:first + (unit + 1) * share]
        written = int(counts[unit])
        if written > share:  # circular: the newest `share` words, oldest first
            program.dropped += (written - share) // 2
            records = np.roll(records, -(written % share))
        else:
            records = records[:written]
        program.warps.append(pair(records.reshape(-1, 2)))
    return program


def pair(entries):
    """[(scope, start cycle, end cycle)] of a unit's records, each end matched with its scope's start;
    an end without a start (its start overwritten) is left out."""
    tags, lows = entries[:, 0].astype(np.uint64), entries[:, 1].astype(np.uint64)
    cycles = ((tags & 0x7FF) << np.uint64(32)) | lows
    scopes = ((tags >> np.uint64(23)) & 0xFF).astype(int)
    ends = (tags >> np.uint64(31)).astype(bool)
    open_at, spans = {}, []
    for scope, cycle, end in zip(scopes.tolist(), cycles.tolist(), ends.tolist()):
        if not end:
            open_at[scope] = cycle
        elif scope in open_at:
            spans.append((scope, open_at.pop(scope), cycle))
    spans.sort(key=lambda span: span[1])
    return spans
