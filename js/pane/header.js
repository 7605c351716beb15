// The pane's header (docs/loss-pane.md, "What you see"): the run, its state, the metric count, a submitted run's
// lifecycle and resources in its backend's words, "Open in Stellar", the bell that notifies when a watched run ends
// (and the banner saying so), and the note on the run that the kernel posts with its client.
import { h } from "../shared/dom.js";
import { formatNumber } from "../shared/format.js";
import { lifecycleText, resourcesText } from "../shared/job_words.js";
import { watchModel } from "./notify.js";

export class PaneHeader {
  /** The header of a pane view over `model`; `el` is the header row, `alertBox` the banner below it. */
  constructor(model) {
    this.model = model;
    this.stateBadge = h("span", { class: "tau-pane-state" });
    this.runLabel = h("span", { class: "tau-pane-run" });
    this.metricCount = h("span", { class: "tau-pane-count" });
    // A submitted run's lifecycle in its backend's words and the resources it asked for (traits `lifecycle`,
    // `resources`; shared/job_words.js, as on the run page).
    this.lifecycleLine = h("span", { class: "tau-pane-lifecycle" });
    this.resourcesLine = h("span", { class: "tau-pane-resources" });
    this.link = h("a", { class: "tau-pane-stellar", target: "_blank", rel: "noopener" }, "Open in Stellar ↗");
    // A note on the run: Python posts it to the run's notes route (the pane's client holds the token).
    this.noteInput = h("input", { type: "text", class: "tau-pane-note-input", maxlength: "10000",
      placeholder: "note on this run…", "aria-label": "note on this run",
      onkeydown: (e) => { if (e.key === "Enter") this.sendNote(); } });
    this.noteStatus = h("span", { class: "tau-pane-note-status", role: "status" });
    this.noteBox = h("span", { class: "tau-pane-note", hidden: true }, this.noteInput,
      h("button", { type: "button", class: "tau-pane-note-send", onclick: () => this.sendNote() }, "add"));
    this.noteButton = h("button", { type: "button", class: "tau-pane-note-toggle", title: "add a note to this run",
      onclick: () => { this.noteBox.hidden = !this.noteBox.hidden; if (!this.noteBox.hidden) this.noteInput.focus(); } },
    "note");
    this.model.on("msg:custom", (msg) => {
      if (!msg || msg.type !== "note-result") return;
      this.noteStatus.textContent = msg.message;
      this.noteStatus.dataset.ok = String(Boolean(msg.ok));
      if (msg.ok) {
        this.noteInput.value = "";
        this.noteBox.hidden = true;
      }
    });
    // The bell: a browser notification when a watched run ends (permission is asked on this click only).
    this.watch = watchModel(this.model);
    this.bell = h("button", { type: "button", class: "tau-pane-bell", onclick: () => this.toggleBell() });
    this.syncBell();
    this.alertBox = h("div", { class: "tau-pane-alert", role: "alert", hidden: true });
    this.el = h("div", { class: "tau-pane-header" }, this.runLabel, this.stateBadge, this.metricCount,
      this.lifecycleLine, this.resourcesLine, this.link, this.bell, this.noteButton, this.noteBox, this.noteStatus);
  }

  syncBell() {
    const bell = this.watch.bell;
    const on = bell.on;
    const blocked = on && bell.permission === "denied";
    this.bell.setAttribute("aria-pressed", String(on));
    this.bell.dataset.permission = bell.permission;
    this.bell.textContent = on ? "🔔 notifying" : "🔕 notify";
    this.bell.title = !on ? "notify me when a run ends (browser notification)"
      : blocked ? "browser notifications are blocked for this site: the pane shows a banner instead"
        : bell.permission === "unsupported" ? "this browser has no notifications: the pane shows a banner instead"
          : "notifying when a run ends (click to stop)";
    this.bell.setAttribute("aria-label", this.bell.title);
  }

  async toggleBell() {
    try {
      await this.watch.bell.toggle();
    } finally {
      this.syncBell();
    }
  }

  /** A watched run ended: say so in the pane (whether or not the browser raised a notification). */
  showNotice(notice) {
    const close = h("button", { type: "button", class: "tau-pane-alert-close", "aria-label": "dismiss",
      onclick: () => { this.alertBox.hidden = true; } }, "✕");
    this.alertBox.replaceChildren(h("span", { class: "tau-pane-alert-text" },
      notice.body ? `${notice.title}: ${notice.body}` : notice.title), close);
    this.alertBox.dataset.kind = notice.kind;
    this.alertBox.dataset.run = notice.run;
    this.alertBox.dataset.raised = String(Boolean(notice.raised));
    this.alertBox.hidden = false;
  }

  sendNote() {
    const text = this.noteInput.value.trim();
    if (!text) {
      this.noteStatus.textContent = "a note needs some text";
      return;
    }
    this.noteStatus.textContent = "adding…";
    this.model.send({ type: "note", text });
  }

  /** The header from the traits: run, state badge, metric count, lifecycle, resources, the Stellar link. */
  sync(state) {
    this.runLabel.textContent = this.model.get("run_id");
    this.stateBadge.textContent = state || "state unknown";
    this.stateBadge.className = `tau-pane-state tau-pane-state-${state || "unknown"}`;
    const total = this.model.get("total_metrics") || (this.model.get("metrics") || []).length;
    this.metricCount.textContent = total ? `${formatNumber(total)} metric${total === 1 ? "" : "s"}` : "";
    const lifecycle = lifecycleText(this.model.get("lifecycle"));
    this.lifecycleLine.textContent = lifecycle;
    this.lifecycleLine.hidden = !lifecycle;
    const resources = resourcesText(this.model.get("resources"));
    this.resourcesLine.textContent = resources ? `asked for ${resources}` : "";
    this.resourcesLine.hidden = !resources;
    const href = this.model.get("stellar_href");
    if (href) this.link.setAttribute("href", href); else this.link.removeAttribute("href");
  }
}
