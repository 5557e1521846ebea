// How long a launch will take in Triton's interpreter, estimated before it runs from what the form
// knows: the largest input's elements and the programs (a literal grid, or those elements over the
// product of the BLOCK-like constexpr values). The interpreter runs the programs one after another;
// measured on the 2-core CPU VM of docs/measured.md (triton 3.7.1, torch 2.13.0), vector add costs about
// 1 ms a program plus 1 µs an element: 4M elements in blocks of 1024 took 8-10 s, 262,144 in
// blocks of 16 (16,384 programs) 17.7 s. An estimate to warn by, not a promise.
import { formatCount, formatSeconds } from "../shared/format.js";

const PROGRAM_S = 1e-3;
const ELEMENT_S = 1e-6;
const IR_S = 0.6;          // compiling the IR stages, about constant
const WARN_SHARE = 0.7;    // warn from this share of the time limit

function product(values) {
  return values.reduce((a, b) => a * b, 1);
}

// Programs of a grid written as literal integers, "(3,)" or "(4, 2)"; null otherwise.
function literalGrid(grid) {
  const match = /^\(?\s*(\d+(?:\s*,\s*\d+)*)\s*,?\s*\)?$/.exec(grid.trim());
  return match ? product(match[1].split(",").map(Number)) : null;
}

// launch: {elements: the largest input's numel or null, blocks: [BLOCK-like literal values], grid,
// ir: options.ir}. → {seconds, programs, elements} or null when nothing is known.
export function estimate({ elements, blocks, grid, ir }) {
  let programs = literalGrid(grid);
  if (programs === null && elements && blocks.length) programs = Math.ceil(elements / product(blocks));
  if (!elements && programs === null) return null;
  const seconds = (programs ?? 1) * PROGRAM_S + (elements ?? 0) * ELEMENT_S + (ir ? IR_S : 0);
  return { seconds, programs, elements };
}

// The warning for an estimate against the time limit, or null when the run should fit.
export function estimateWarning(found, limitS) {
  if (!found || !limitS || found.seconds < WARN_SHARE * limitS) return null;
  const about = formatSeconds(found.seconds);
  const what = found.programs !== null ? `${formatCount(found.programs)} programs, run one after another` : "its inputs";
  const verdict = found.seconds >= limitS ? `will not fit in the ${limitS} s limit` : `is close to the ${limitS} s limit`;
  return `In the interpreter this launch takes about ${about} s (${what}): it ${verdict}. `
    + "Fewer programs (a bigger BLOCK) or smaller inputs fit; unticking IR saves about half a second.";
}
