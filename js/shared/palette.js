// The run palette: which colour a run is drawn in, the same in the pane and on every Stellar page.
//
// The rule: a run's own colour is RUN_COLORS[fnv1a(run id) % RUN_COLORS.length], so a run keeps its colour
// from page to page whatever else is drawn beside it. Runs drawn together are assigned in the order they
// are listed (the pane: its run, then `compare`; the compare page: target, then compare, the same list
// its "Open in Stellar" link carries); one whose colour is taken by an earlier run gets the next free colour,
// so runs drawn together never share one while there are colours left.

/** Tableau's ten colours less the red, which marks non-finite values. */
export const RUN_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
  "#17becf"];
/** Non-finite marks (✕ on the x axis), never a run's colour. */
export const NON_FINITE_COLOR = "#b3261e";

const encoder = new TextEncoder();

/** 32-bit FNV-1a of the UTF-8 bytes: small, and the same in every browser and in Node. */
export function fnv1a(text) {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** The colour a run has when drawn alone, or first. */
export function runColor(runId) {
  return RUN_COLORS[fnv1a(String(runId)) % RUN_COLORS.length];
}

/** Colours for runs drawn together, in their listed order: a Map run id → colour. */
export function assignRunColors(runIds) {
  const colors = new Map();
  const taken = new Set();
  for (const runId of runIds) {
    if (colors.has(runId)) continue;
    let slot = fnv1a(String(runId)) % RUN_COLORS.length;
    if (taken.size < RUN_COLORS.length) {
      while (taken.has(slot)) slot = (slot + 1) % RUN_COLORS.length;
    }
    taken.add(slot);
    colors.set(runId, RUN_COLORS[slot]);
  }
  return colors;
}
