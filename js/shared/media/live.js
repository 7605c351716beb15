// A live run's media, followed (docs/media.md, "On the Stellar pages"): which runs are still live, what changed
// between two reads of the runs' `…/media` tags, and a bounded poll that runs only while the page is visible.
// Pure (no DOM, no page): the Stellar media section passes in its reads, its timer and the page's visibility.
import { tagRange } from "./sections.js";

/** Run states whose media may still grow (the Portal's `tails` route's rule); any other state is terminal. */
export const LIVE_STATES = ["pending", "running"];
/** How often a live run's `…/media` is read again (ms). */
export const POLL_MS = 5000;

/** Whether `run` (a `…/runs/{id}` answer's `run`) may still log media. */
export function isLive(run) {
  return LIVE_STATES.includes(String(run?.state ?? "").trim().toLowerCase());
}

function cardKeys(tagsByRun) {
  const keys = new Map(); // card key → { kind, tag, runs: sorted run keys having it }
  for (const [run, tags] of tagsByRun) {
    for (const t of tags || []) {
      const key = `${t.kind}/${t.tag}`;
      if (!keys.has(key)) keys.set(key, { kind: t.kind, tag: t.tag, runs: [] });
      keys.get(key).runs.push(run);
    }
  }
  for (const entry of keys.values()) entry.runs.sort();
  return keys;
}

/**
 * What changed from `before` to `after` (each Map run → [{ kind, tag, step_min, step_max, … }]):
 * `added` the card keys new in `after`, `grown` Map card key → its new { step_min, step_max } for a tag whose
 * range over the runs changed, `runsChanged` the card keys of a tag that a run gained (or lost): its card needs a
 * panel per run again.
 */
export function mediaChanges(before, after) {
  const old = cardKeys(before);
  const added = [];
  const grown = new Map();
  const runsChanged = [];
  for (const [key, entry] of cardKeys(after)) {
    const was = old.get(key);
    if (!was) {
      added.push(key);
      continue;
    }
    if (was.runs.join("\u0000") !== entry.runs.join("\u0000")) runsChanged.push(key);
    const a = tagRange(before, entry.kind, entry.tag);
    const b = tagRange(after, entry.kind, entry.tag);
    if (a.step_min !== b.step_min || a.step_max !== b.step_max) grown.set(key, b);
  }
  return { added, grown, runsChanged };
}

/**
 * A poll of `tick()` (a Promise of whether to go on) every `interval` ms while `visible()`: `start()` schedules the
 * first, a tick that answers false (or `stop()`) ends it, a hidden page schedules none until `wake()` (the page
 * shown again). One tick at a time; `schedule(fn, ms)` / `cancel(handle)` are the timer (setTimeout's by default).
 * Returns { start, stop, wake, running() }.
 */
export function createPoller({ tick, visible = () => true, interval = POLL_MS, schedule = setTimeout,
  cancel = clearTimeout }) {
  let handle = null;
  let busy = false;
  let stopped = true;
  const plan = () => {
    if (stopped || busy || handle !== null || !visible()) return;
    handle = schedule(run, interval);
  };
  async function run() {
    handle = null;
    if (stopped) return;
    if (!visible()) return; // shown again: wake()
    busy = true;
    let more = true;
    try {
      more = await tick();
    } catch {
      more = true; // a failed read is tried again at the next tick
    } finally {
      busy = false;
    }
    if (more === false) stopped = true;
    plan();
  }
  return {
    start() {
      stopped = false;
      plan();
    },
    stop() {
      stopped = true;
      if (handle !== null) cancel(handle);
      handle = null;
    },
    wake: plan,
    running: () => !stopped,
  };
}
