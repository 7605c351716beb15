// When the pane raises a notice: once per transition of a run into an ended state, never for a run that had
// already ended when the page first saw it, and one browser notification per model however many views it has.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Bell, RunWatch, noticeFor, watchModel } from "../pane/notify.js";

const rule = "stopped by --stop-if 'loss>10': loss was 12.5 at step 420; entrypoint exited with code 143";

class FakeModel {
  constructor(runs, paneId = "") {
    this.traits = { runs, pane_id: paneId };
    this.handlers = new Map();
  }

  get(name) {
    return this.traits[name];
  }

  on(event, fn) {
    if (!this.handlers.has(event)) this.handlers.set(event, []);
    this.handlers.get(event).push(fn);
  }

  set(name, value) {
    this.traits[name] = value;
    for (const fn of this.handlers.get(`change:${name}`) || []) fn();
  }
}

function memoryStorage(initial = {}) {
  const data = new Map(Object.entries(initial));
  return { getItem: (k) => (data.has(k) ? data.get(k) : null), setItem: (k, v) => data.set(k, String(v)),
    removeItem: (k) => data.delete(k) };
}

function fakeNotification(permission, onRequest = () => "granted") {
  const raised = [];
  const requests = [];
  class FakeNotification {
    constructor(title, options) {
      raised.push({ title, ...options });
    }

    static async requestPermission() {
      requests.push(1);
      FakeNotification.permission = onRequest();
      return FakeNotification.permission;
    }
  }
  FakeNotification.permission = permission;
  return { FakeNotification, raised, requests };
}

const runs = (state, extra = {}) => ({ a: { state, status_message: "", ...extra } });

test("a run that goes from running to succeeded raises one notice, and only once", () => {
  const watch = new RunWatch();
  assert.deepEqual(watch.update(runs("running")), []);
  const [notice, ...rest] = watch.update(runs("succeeded"));
  assert.equal(rest.length, 0);
  assert.equal(notice.kind, "finished");
  assert.equal(notice.title, "tau run a succeeded");
  assert.deepEqual(watch.update(runs("succeeded")), []); // the same state again (the next poll)
  assert.deepEqual(watch.update(runs("succeeded", { metrics: { loss: {} } })), []);
});

test("a run already ended when first seen (a reloaded page) raises nothing", () => {
  const watch = new RunWatch();
  assert.deepEqual(watch.update(runs("failed")), []);
  assert.deepEqual(watch.update(runs("failed")), []);
});

test("an unknown state in between keeps the last known one", () => {
  const watch = new RunWatch();
  watch.update(runs("running"));
  assert.deepEqual(watch.update(runs("")), []);
  assert.equal(watch.update(runs("failed", { status_message: "OOM" }))[0].kind, "failed");
});

test("failed, cancelled and a stop rule's cancellation are told apart", () => {
  assert.equal(noticeFor("a", "failed", "exit 1").title, "tau run a failed");
  assert.equal(noticeFor("a", "cancelled", "").kind, "cancelled");
  const stop = noticeFor("a", "cancelled", rule);
  assert.equal(stop.kind, "stop-rule");
  assert.equal(stop.title, "tau run a was stopped by a stop rule");
  assert.equal(stop.body, rule);
});

test("compared runs each raise their own notice", () => {
  const watch = new RunWatch();
  watch.update({ a: { state: "running" }, b: { state: "running" } });
  const notices = watch.update({ a: { state: "running" }, b: { state: "cancelled", status_message: rule } });
  assert.deepEqual(notices.map((n) => [n.run, n.kind]), [["b", "stop-rule"]]);
});

test("the bell asks permission only when turned on, and raises only when on and granted", async () => {
  const { FakeNotification, raised, requests } = fakeNotification("default");
  const bell = new Bell({ storage: memoryStorage(), Notifier: FakeNotification });
  const notice = noticeFor("a", "succeeded", "");
  assert.equal(bell.raise(notice), false); // off
  assert.equal(requests.length, 0);
  assert.equal(await bell.toggle(), true);
  assert.equal(requests.length, 1);
  assert.equal(bell.raise(notice), true);
  assert.deepEqual(raised, [{ title: "tau run a succeeded", body: "", tag: "tau-run-a-succeeded" }]);
  assert.equal(await bell.toggle(), false);
  assert.equal(bell.raise(notice), false);
  assert.equal(requests.length, 1);
});

test("a denied or missing Notification API raises nothing (the banner still shows)", async () => {
  const { FakeNotification, raised } = fakeNotification("default", () => "denied");
  const bell = new Bell({ storage: memoryStorage(), Notifier: FakeNotification });
  await bell.toggle();
  assert.equal(bell.raise(noticeFor("a", "failed", "")), false);
  assert.equal(raised.length, 0);
  const none = new Bell({ storage: memoryStorage({ "tau-pane-notify": "on" }), Notifier: undefined });
  assert.equal(none.permission, "unsupported");
  assert.equal(none.raise(noticeFor("a", "failed", "")), false);
});

test("a model raises one browser notification per transition however many views listen", () => {
  const { FakeNotification, raised } = fakeNotification("granted");
  const bell = new Bell({ storage: memoryStorage({ "tau-pane-notify": "on" }), Notifier: FakeNotification });
  const model = new FakeModel(runs("running"), "pane-1");
  const entry = watchModel(model, bell);
  assert.equal(watchModel(model, bell), entry); // a second view shares the model's watch
  assert.equal(watchModel(new FakeModel(runs("running"), "pane-1"), bell), entry); // a wrapper of the same model
  const banners = [];
  entry.listeners.add((n) => banners.push(["view 1", n.kind, n.raised]));
  entry.listeners.add((n) => banners.push(["view 2", n.kind, n.raised]));
  model.set("runs", runs("running"));
  model.set("runs", runs("succeeded"));
  model.set("runs", runs("succeeded"));
  assert.equal(raised.length, 1);
  assert.deepEqual(banners, [["view 1", "finished", true], ["view 2", "finished", true]]);
});

test("a model created on a run that already ended (a reload) raises nothing", () => {
  const { FakeNotification, raised } = fakeNotification("granted");
  const bell = new Bell({ storage: memoryStorage({ "tau-pane-notify": "on" }), Notifier: FakeNotification });
  const model = new FakeModel(runs("succeeded"), "pane-2");
  const entry = watchModel(model, bell);
  const banners = [];
  entry.listeners.add((n) => banners.push(n));
  model.set("runs", runs("succeeded"));
  assert.equal(raised.length, 0);
  assert.equal(banners.length, 0);
});
