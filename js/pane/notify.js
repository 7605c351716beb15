// Being told when a watched run ends: a browser notification (when the pane's bell is on and the browser allows
// it) and a banner in the pane, once per transition of a run into succeeded, failed or cancelled (a stop rule's
// cancellation says so). The first state the page sees of a run is where it starts from: a page reloaded on a run
// that already ended says nothing.

export const ENDED = ["succeeded", "completed", "failed", "cancelled", "canceled", "incomplete"];
const BELL_KEY = "tau-pane-notify"; // "on" while the bell is on (per browser, like the x axis)
const STOP_RULE = /^stopped by --stop-/;

/** What to say of a run that ended: {run, state, kind, title, body}; kind is stop-rule, failed, cancelled or finished. */
export function noticeFor(run, state, statusMessage) {
  const why = statusMessage || "";
  const cancelled = state === "cancelled" || state === "canceled";
  const kind = cancelled && STOP_RULE.test(why) ? "stop-rule"
    : state === "failed" ? "failed" : cancelled ? "cancelled" : "finished";
  const words = { "stop-rule": "was stopped by a stop rule", failed: "failed", cancelled: "was cancelled",
    finished: state === "succeeded" || state === "completed" ? "succeeded" : `ended (${state})` }[kind];
  return { run, state, kind, title: `tau run ${run} ${words}`, body: why };
}

/** Runs' states as the page sees them; ``update`` returns the notices for runs that just ended. */
export class RunWatch {
  constructor() {
    this.states = new Map();
  }

  /** ``runs`` is the pane's ``runs`` trait: {run_id: {state, status_message, …}}. */
  update(runs) {
    const notices = [];
    for (const [run, info] of Object.entries(runs || {})) {
      const state = (info && info.state) || "";
      if (!state) continue; // not known yet (or not now): the last known state stands
      const before = this.states.get(run);
      this.states.set(run, state);
      if (before === undefined || before === state) continue;
      if (ENDED.includes(state) && !ENDED.includes(before)) notices.push(noticeFor(run, state, info.status_message));
    }
    return notices;
  }
}

/** The bell: on or off in this browser, and what the browser allows ("granted", "denied", "default", "unsupported"). */
export class Bell {
  constructor({ storage = globalThis.localStorage, Notifier = globalThis.Notification } = {}) {
    this.storage = storage;
    this.Notifier = Notifier;
  }

  get permission() {
    return this.Notifier ? this.Notifier.permission : "unsupported";
  }

  get on() {
    try {
      return this.storage?.getItem(BELL_KEY) === "on";
    } catch {
      return false;
    }
  }

  set on(value) {
    try {
      if (value) this.storage?.setItem(BELL_KEY, "on"); else this.storage?.removeItem(BELL_KEY);
    } catch {
      // storage refused (a sandboxed page): the bell is off after a reload
    }
  }

  /** Turn the bell on or off; turning it on asks the browser's permission (call only from a click). */
  async toggle() {
    if (this.on) {
      this.on = false;
      return false;
    }
    this.on = true;
    if (this.Notifier && this.Notifier.permission === "default") await this.Notifier.requestPermission();
    return true;
  }

  /** A browser notification for the notice, when the bell is on and allowed; true when one was raised. */
  raise(notice) {
    if (!this.on || this.permission !== "granted") return false;
    try {
      // One tag per run and state: two views or two panes of one run raise one notification.
      new this.Notifier(notice.title, { body: notice.body, tag: `tau-run-${notice.run}-${notice.state}` });
      return true;
    } catch {
      return false; // (a page where the constructor is not allowed: the banner still says it)
    }
  }
}

const watches = new Map(); // pane_id → entry (the model object a view is handed may be a wrapper of its own)

/** One watch per pane model (its ``pane_id``), fed by its ``runs`` trait: every view of the model shares it, so a
 *  transition raises one browser notification however many views show the pane; each view's banner listens. */
export function watchModel(model, bell = new Bell()) {
  const key = model.get("pane_id") || model;
  let entry = watches.get(key);
  if (entry) return entry;
  entry = { watch: new RunWatch(), listeners: new Set(), bell };
  entry.watch.update(model.get("runs")); // where the page starts from: no notice for a run that already ended
  model.on("change:runs", () => {
    for (const notice of entry.watch.update(model.get("runs"))) {
      notice.raised = bell.raise(notice);
      for (const listener of entry.listeners) listener(notice);
    }
  });
  watches.set(key, entry);
  return entry;
}
