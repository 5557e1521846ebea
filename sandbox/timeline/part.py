"""The result's `timeline` part (docs/result.md) from a launch's decoded record (sandbox.timeline.record).

Times: each SM counts its own cycles (its clock is not the others'), the globaltimer is shared.
So a program's bar is placed by the globaltimer (ns since the launch's first program began), and
its regions by their cycles since the program's first record, turned into ns at the SM clock this
launch ran at: measured from the programs that ran one after another on the same SM (their cycle
counts against the globaltimer), else the device's nominal clock.
"""
import math
import statistics

MAX_BARS = 8192          # programs drawn as bars on their SM lanes; past it, a sample
MAX_DETAILED = 48        # programs sent with their warps' regions
MAX_SPANS_PER_WARP = 64  # a region inside a loop records each iteration: the first ones are kept
MAX_SPANS = 24_000       # spans sent in all: fewer per warp where the programs have many warps
MIN_FIT_NS = 20_000      # programs on one SM must span this much for the clock to be measured
CLOCK_RANGE_GHZ = (0.3, 4.0)


def build(programs, regions, grid, num_warps, nominal_ghz, sm_count, kernel_ms):
    """The timeline part: `programs` decoded from the record, `regions` (sandbox.timeline.regions)
    in Proton's scope order, `kernel_ms` the uninstrumented median (None when not timed)."""
    programs = sorted(programs, key=lambda p: p.start_ns)
    ghz, clock_source = clock(programs, nominal_ghz)
    origin = programs[0].start_ns
    durations = {p.block: p.end_ns - p.start_ns for p in programs}
    total_ns = max(p.end_ns for p in programs) - origin
    bars = sample(programs, MAX_BARS, durations)
    detailed = sample(programs, MAX_DETAILED, durations)
    per_warp = max(4, min(MAX_SPANS_PER_WARP, MAX_SPANS // max(1, len(detailed) * num_warps)))
    notes = []
    if len(bars) < len(programs):
        notes.append(f"{len(programs):,} programs: {len(bars):,} of them drawn (the first, the last, the slowest, evenly spaced).")
    dropped = sum(p.dropped for p in programs)
    if dropped:
        notes.append(f"{dropped:,} records were overwritten in Proton's per-warp buffer (a region inside a long loop): "
                     f"those warps show their last regions only.")
    return {
        "grid": list(grid), "num_warps": num_warps, "sm_count": sm_count,
        "programs_total": len(programs), "sampled": len(bars) < len(programs) or len(detailed) < len(programs),
        "regions": [{"name": r.name, "lines": r.lines, "marked": r.marked} for r in regions],
        "bars": [[p.block, p.sm, p.start_ns - origin, p.end_ns - origin] for p in bars],
        "programs": [detail(p, grid, region_spans(p, ghz, origin, len(regions), per_warp), origin, per_warp)
                     for p in sorted(detailed, key=lambda p: p.block)],
        "clock": {"ghz": round(ghz, 4), "source": clock_source},
        "resolution": {"cycles": 1, "ns_per_cycle": round(1 / ghz, 4), "globaltimer_ns": timer_step(programs)},
        "total_ns": total_ns, "kernel_ns": None if kernel_ms is None else round(kernel_ms * 1e6),
        "overhead": None if not kernel_ms else round(total_ns / (kernel_ms * 1e6) - 1, 4),
        "summary": summary(programs, len(regions), ghz, durations),
        "notes": notes,
    }


def pid_of(block, grid):
    gx, gy = grid[0], grid[1]
    return [block % gx, block // gx % gy, block // (gx * gy)]


def region_spans(program, ghz, origin, region_count, per_warp):
    """Per warp, its first `per_warp` spans of known regions: [region, start cycle, end cycle, start
    ns, end ns], cycles from the program's first record, ns from the launch's first program."""
    starts = [warp[0][1] for warp in program.warps if warp]
    base = min(starts) if starts else 0
    offset = program.start_ns - origin
    return [[[scope, s - base, e - base, round(offset + (s - base) / ghz), round(offset + (e - base) / ghz)]
             for scope, s, e in warp if scope < region_count][:per_warp] for warp in program.warps]


def detail(program, grid, warps, origin, per_warp):
    return {"pid": pid_of(program.block, grid), "block": program.block, "sm": program.sm,
            "start_ns": program.start_ns - origin, "end_ns": program.end_ns - origin, "warps": warps,
            "truncated": any(len(w) > per_warp for w in program.warps)}


def sample(programs, most, durations):
    """At most `most` programs: all, or the first, the last, the slowest and evenly spaced ones."""
    if len(programs) <= most:
        return programs
    by_block = sorted(programs, key=lambda p: p.block)
    slowest = max(programs, key=lambda p: durations[p.block])
    step = len(by_block) / (most - 2)
    chosen = {by_block[0].block: by_block[0], by_block[-1].block: by_block[-1], slowest.block: slowest}
    for i in range(most - 3):
        p = by_block[min(len(by_block) - 1, int(i * step))]
        chosen.setdefault(p.block, p)
    return sorted(chosen.values(), key=lambda p: p.start_ns)


def clock(programs, nominal_ghz):
    """(GHz, "measured" | "nominal"): the slope of cycles over globaltimer ns for programs of the same
    SM (each SM's own cycle origin taken out), where they span enough time to say."""
    by_sm = {}
    for p in programs:
        first = min((warp[0][1] for warp in p.warps if warp), default=None)
        if first is not None:
            by_sm.setdefault(p.sm, []).append((p.start_ns, first))
    num = den = 0.0
    for points in by_sm.values():
        if len(points) < 2:
            continue
        mean_t = statistics.fmean(t for t, _ in points)
        mean_c = statistics.fmean(c for _, c in points)
        num += sum((t - mean_t) * (c - mean_c) for t, c in points)
        den += sum((t - mean_t) ** 2 for t, _ in points)
    if den > 0 and math.sqrt(den) >= MIN_FIT_NS:
        ghz = num / den
        if CLOCK_RANGE_GHZ[0] <= ghz <= CLOCK_RANGE_GHZ[1]:
            return ghz, "measured"
    return nominal_ghz, "nominal"


def timer_step(programs):
    """The globaltimer's step as this launch saw it: the largest power of 2 dividing every start."""
    step = 0
    for p in programs:
        step |= p.start_ns | p.end_ns
    return step & -step if step else None


def summary(programs, region_count, ghz, durations):
    """The share of time per region (its warps' time over the programs' time), the slowest program
    against the median one region by region, and how evenly the SMs were kept busy."""
    per_program = {p.block: region_totals(p, region_count, ghz) for p in programs}
    busy = sum(durations.values()) or 1
    ordered = sorted(programs, key=lambda p: durations[p.block])
    median, slowest = ordered[len(ordered) // 2], ordered[-1]
    per_sm = {}
    for p in programs:
        per_sm[p.sm] = per_sm.get(p.sm, 0) + durations[p.block]
    mean_sm = statistics.fmean(per_sm.values())
    return {
        "regions": [{"region": i, "share": round(sum(t[i] for t in per_program.values()) / busy, 4),
                     "mean_ns": round(statistics.fmean(t[i] for t in per_program.values()))} for i in range(region_count)],
        "slowest": {"block": slowest.block, "sm": slowest.sm, "ns": durations[slowest.block],
                    "regions_ns": [round(v) for v in per_program[slowest.block]]},
        "median": {"block": median.block, "sm": median.sm, "ns": durations[median.block],
                   "regions_ns": [round(v) for v in per_program[median.block]]},
        "sms_used": len(per_sm),
        "sm_busy_ns": {"min": min(per_sm.values()), "max": max(per_sm.values()), "mean": round(mean_sm)},
        "imbalance": round(max(per_sm.values()) / mean_sm - 1, 4) if mean_sm else 0,
    }


def region_totals(program, count, ghz):
    """Per region, its ns in this program: the mean over warps of each warp's summed spans (all of
    them, those past MAX_SPANS_PER_WARP too)."""
    totals = [0.0] * count
    for warp in program.warps:
        for region, start, end in warp:
            if region < count:
                totals[region] += (end - start) / ghz / max(1, len(program.warps))
    return totals
