// One step cursor for a whole view (docs/media.md, "The step cursor"): the loss curve, a typed step or a media
// card's slider sets it, and every media card of every run shown moves to its nearest stored step.
//
// The cursor holds the step asked for, never a card's nearest one: each card labels the step it shows. Steps are
// integers of int64 (TensorBoard's and TauGrid's steps); a value that is not one is refused in words, so a card
// never moves to a step nobody asked for.

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

/** The step of `value` (a number or a decimal string) as a Number, or null with `why` when it is not one. */
export function parseStep(value) {
  const text = typeof value === "number" ? (Number.isInteger(value) ? String(value) : "") : String(value ?? "").trim();
  if (!/^-?\d{1,19}$/.test(text)) return { step: null, why: `${JSON.stringify(String(value ?? "").slice(0, 40))} is not a whole step` };
  const big = BigInt(text);
  if (big < I64_MIN || big > I64_MAX) return { step: null, why: `step ${text} is outside int64` };
  return { step: Number(big), why: "" };
}

/**
 * A cursor shared by every card of a view: `set(step, source)` moves it (a non-step is refused: returns the
 * reason), `subscribe(fn)` calls `fn(step, source)` on each move and now when a step is set, and returns the
 * unsubscribe function. `source` names who moved it ("curve", "input", "slider", "address") so a slider does not
 * answer its own move.
 */
export function createStepCursor(initial = null) {
  let step = initial === null ? null : parseStep(initial).step;
  const listeners = new Set();
  return {
    get() {
      return step;
    },
    set(value, source = "input") {
      const parsed = parseStep(value);
      if (parsed.step === null) return parsed.why;
      if (parsed.step === step) return "";
      step = parsed.step;
      for (const fn of [...listeners]) fn(step, source);
      return "";
    },
    subscribe(fn) {
      listeners.add(fn);
      if (step !== null) fn(step, "initial");
      return () => listeners.delete(fn);
    },
  };
}

/** The stored step nearest `step` in the sorted `steps` (the earlier one on a tie, as the Portal's reads answer). */
export function nearestStep(steps, step) {
  if (!steps.length) return null;
  let lo = 0;
  let hi = steps.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid] < step) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && step - steps[lo - 1] <= steps[lo] - step) return steps[lo - 1];
  return steps[lo];
}
