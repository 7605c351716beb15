// The order in which a view's cards follow one move of the step cursor (docs/media.md, "One step cursor"): the
// image and text cards first (one small read each, and the thumbnails a user is looking for), the histogram cards
// after them (a read of the tag around the cursor each, and a redraw of their plots) once those cards have drawn,
// their thumbnails have loaded and the cursor has rested for REST_MS. A move that a newer one supersedes aborts:
// its histogram cards never start (a dragged slider or a quick succession of typed steps reads the histograms of
// the step it stops at), and what it already asked is ended through its AbortSignal. A browser opens only 6
// connections to a host: before this, each move's histogram reads took them ahead of the thumbnail.

/** Milliseconds the cursor rests on a step before the histogram cards read it. */
export const REST_MS = 120;
/** The longest a move waits for its thumbnails before the histogram cards go anyway. */
export const THUMBNAIL_WAIT_MS = 1500;

/** A Promise settled once every `img` under `el` has loaded or failed, `signal` aborted, or `limitMs` passed. */
export function imagesSettled(el, signal, limitMs = THUMBNAIL_WAIT_MS) {
  const pending = [...(el?.querySelectorAll?.("img") || [])].filter((img) => img.complete === false);
  if (!pending.length || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    let left = pending.length;
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener?.("abort", done);
      resolve();
    };
    const one = () => {
      left -= 1;
      if (left <= 0) done();
    };
    const timer = setTimeout(done, limitMs);
    signal?.addEventListener?.("abort", done, { once: true });
    for (const img of pending) {
      img.addEventListener("load", one, { once: true });
      img.addEventListener("error", one, { once: true });
    }
  });
}

/** A Promise settled after `ms`, or at once when `signal` aborts. */
export function rest(ms, signal) {
  if (signal?.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener?.("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener?.("abort", done, { once: true });
  });
}

/**
 * Shows `step` on `cards` ([{ kind, card }], each card with `show(step)` and `el`): first every card whose kind is
 * not "histograms", then — once those have drawn, their images have settled (`settled(el, signal)`) and the cursor
 * has rested `restMs` — the histogram cards, unless `signal` aborted meanwhile (a newer move took over). Resolves
 * with "done", or "superseded" when the histogram cards were left to the newer move.
 */
export async function showInOrder(cards, step, { signal, restMs = REST_MS, settled = imagesSettled } = {}) {
  const later = cards.filter((c) => c.kind === "histograms");
  const first = cards.filter((c) => c.kind !== "histograms");
  await Promise.allSettled(first.map(async ({ card }) => {
    await card.show(step);
    await settled(card.el, signal);
  }));
  if (later.length) await rest(restMs, signal);
  if (signal?.aborted) return "superseded";
  await Promise.allSettled(later.map(({ card }) => card.show(step)));
  return "done";
}
