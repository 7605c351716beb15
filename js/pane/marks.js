// Latency marks for the tests and bench/bench_pane.py: one per drawn chunk, with when it was sent, received and drawn.

const MAX_MARKS = 20000;

/** Now, in ms since the epoch with sub-ms precision (comparable with the kernel's time.time()). */
export function now() {
  return performance.timeOrigin + performance.now();
}

/** Records `marks` as drawn now (call after the frame that shows them). */
export function markDrawn(marks) {
  if (!window.__tauPaneMarks) window.__tauPaneMarks = [];
  const log = window.__tauPaneMarks;
  const drawnAt = now();
  for (const m of marks) log.push({ ...m, drawn_at: drawnAt });
  if (log.length > MAX_MARKS) log.splice(0, log.length - MAX_MARKS);
}
