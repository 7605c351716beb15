// The pane's view: header (run, state, Open in Stellar), status line, controls, and one MetricPlot per metric.
import { h } from "../shared/dom.js";
import { runLabels } from "../shared/differing.js";
import { assignRunColors } from "../shared/palette.js";
import { statusWords } from "../shared/run_status.js";
import { SMOOTHING_MAX, SMOOTHING_STEP } from "../shared/smoothing.js";
import { MetricPlot } from "./metric_plot.js";
import { storeFor, totalPoints } from "./store.js";
import { PANE_CSS } from "./style.js";

const SNAPSHOT_EVERY_MS = 5000;

export class Pane {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.store = storeFor(model);
    this.settings = { smoothing: 0, logY: false, axis: "step", hidden: new Set() };
    this.plots = new Map();
    this.scheduled = false;
    this.lastSnapshot = 0;
    this.snapshotDirty = false;
    this.disposed = false;
    this.build();
  }

  /** The pane's run, then the runs compare= resolved to (run_ids, set by the kernel): legend and link order. */
  runIds() {
    return [...new Set([this.model.get("run_id"), ...(this.model.get("run_ids") || [])])];
  }

  /** Each run's legend name: what differs between the drawn runs' configs (shared/differing.js), else its id. */
  labels() {
    const runs = this.runIds();
    const configs = this.model.get("configs") || {};
    const key = JSON.stringify([runs, configs]);
    if (this.labelKey !== key) {
      this.labelKey = key;
      this.labelMap = runLabels(runs, configs);
    }
    return this.labelMap;
  }

  /** Each run's colour (shared/palette.js: the same as on the Stellar page its link opens). */
  colors() {
    const runs = this.runIds();
    const key = runs.join("\u0000");
    if (this.colorKey !== key) {
      this.colorKey = key;
      this.colorMap = assignRunColors(runs);
    }
    return this.colorMap;
  }

  build() {
    this.root = h("div", { class: "tau-pane", "data-state": "", "data-status": "connecting", "data-points": "0" });
    this.stateBadge = h("span", { class: "tau-pane-state" });
    this.runLabel = h("span", { class: "tau-pane-run" });
    this.link = h("a", { class: "tau-pane-stellar", target: "_blank", rel: "noopener" }, "Open in Stellar ↗");
    this.statusLine = h("div", { class: "tau-pane-status", role: "status" });
    const smoothingValue = h("span", { class: "tau-pane-smoothing-value" }, "0");
    this.smoothingInput = h("input", { type: "range", min: "0", max: String(SMOOTHING_MAX),
      step: String(SMOOTHING_STEP), value: "0",
      "aria-label": "smoothing", oninput: (e) => {
        this.settings.smoothing = Number(e.target.value);
        smoothingValue.textContent = e.target.value;
        this.redrawAll();
      } });
    this.logInput = h("input", { type: "checkbox", "aria-label": "log scale", onchange: (e) => {
      this.settings.logY = e.target.checked;
      this.redrawAll();
    } });
    this.axisSelect = h("select", { "aria-label": "x axis", onchange: (e) => {
      this.settings.axis = e.target.value;
      this.redrawAll();
    } }, h("option", { value: "step" }, "step"), h("option", { value: "wall" }, "wall time"));
    this.toggles = h("span", { class: "tau-pane-toggles" });
    this.grid = h("div", { class: "tau-pane-grid" });
    const header = h("div", { class: "tau-pane-header" }, this.runLabel, this.stateBadge, this.link);
    const controls = h("div", { class: "tau-pane-controls" },
      h("label", {}, "smoothing ", this.smoothingInput, " ", smoothingValue),
      h("label", {}, this.logInput, " log y"), h("label", {}, "x: ", this.axisSelect), this.toggles);
    this.errorLine = h("div", { class: "tau-pane-error" });
    this.root.append(h("style", {}, PANE_CSS), header, this.statusLine, controls, this.grid, this.errorLine);
    this.el.append(this.root);
  }

  showError(err) {
    this.errorLine.textContent = `drawing failed: ${err && err.message ? err.message : err}`;
    console.warn("tau loss pane:", err);
  }

  syncMeta() {
    const state = this.model.get("state") || "";
    const status = this.model.get("status") || {};
    this.root.setAttribute("data-state", state);
    this.root.setAttribute("data-status", status.kind || "");
    this.runLabel.textContent = this.model.get("run_id");
    this.stateBadge.textContent = state || "state unknown";
    this.stateBadge.className = `tau-pane-state tau-pane-state-${state || "unknown"}`;
    const href = this.model.get("stellar_href");
    if (href) this.link.setAttribute("href", href); else this.link.removeAttribute("href");
    const words = statusWords(state, status, (this.model.get("runs") || {})[this.model.get("run_id")]);
    this.statusLine.textContent = words;
    this.statusLine.className = `tau-pane-status tau-pane-status-${status.kind || "unknown"}`;
    this.syncPlots();
    for (const plot of this.plots.values()) plot.refreshHead();
  }

  syncPlots() {
    const metrics = this.model.get("metrics") || [];
    for (const [name, plot] of this.plots) {
      if (!metrics.includes(name)) {
        plot.destroy();
        plot.el.remove();
        this.plots.delete(name);
      }
    }
    this.toggles.textContent = "";
    metrics.forEach((name) => {
      const box = h("input", { type: "checkbox", "data-metric": name, onchange: (e) => {
        if (e.target.checked) this.settings.hidden.delete(name); else this.settings.hidden.add(name);
        this.syncPlots();
      } });
      box.checked = !this.settings.hidden.has(name);
      this.toggles.append(h("label", {}, box, ` ${name}`));
      let plot = this.plots.get(name);
      if (!plot) {
        plot = new MetricPlot(this, name);
        this.plots.set(name, plot);
        plot.update();
      }
      plot.el.style.display = this.settings.hidden.has(name) ? "none" : "";
      this.grid.append(plot.el); // keeps the catalog order: loss first
    });
  }

  redrawAll() {
    for (const plot of this.plots.values()) plot.redraw();
  }

  schedule() {
    if (this.scheduled || this.disposed) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      if (this.disposed) return;
      const updates = [...this.plots.values()].map((p) => p.update());
      this.root.setAttribute("data-points", String(totalPoints(this.store)));
      this.snapshotDirty = true;
      Promise.all(updates).then(() => this.maybeSnapshot());
    });
  }

  maybeSnapshot() {
    const t = Date.now();
    const terminal = ["succeeded", "failed", "cancelled", "completed"].includes(this.model.get("state"));
    if (!this.snapshotDirty || (!terminal && t - this.lastSnapshot < SNAPSHOT_EVERY_MS)) return;
    const first = [...this.plots.values()].find((p) => p.ready && !this.settings.hidden.has(p.metric));
    if (!first) return;
    this.lastSnapshot = t;
    this.snapshotDirty = false;
    first.snapshot().then((url) => {
      if (this.disposed || !url) return;
      this.model.set("snapshot", url);
      this.model.save_changes();
    }).catch(() => {});
  }

  hideStaticFallback() {
    // The saved-notebook fallback (a static image output beside the widget) is only for when no live view exists.
    const id = this.model.get("pane_id");
    if (!id) return null;
    const sel = `[data-tau-pane-static="${CSS.escape(id)}"]`;
    const style = h("style", {}, `.jp-OutputArea-child:has(${sel}) { display: none; } ${sel} { display: none; }`);
    document.head.append(style);
    return style;
  }

  start() {
    this.syncMeta();
    const onMeta = () => this.syncMeta();
    const names = ["state", "status", "metrics", "runs", "stellar_href", "compare"];
    for (const n of names) this.model.on(`change:${n}`, onMeta);
    // The runs drawn, or their names, changed (compare= resolved, a sweep's new run, a config read): redraw.
    const onRuns = () => {
      for (const plot of this.plots.values()) plot.redraw();
    };
    for (const n of ["run_ids", "configs"]) this.model.on(`change:${n}`, onRuns);
    const listener = () => this.schedule();
    this.store.listeners.add(listener);
    const hiddenStyle = this.hideStaticFallback();
    const reportWidth = () => {
      const w = Math.round(this.el.getBoundingClientRect().width);
      if (w > 0 && Math.abs(w - (this.model.get("width") || 0)) > 50) {
        this.model.set("width", w);
        this.model.save_changes();
      }
    };
    const ro = new ResizeObserver(reportWidth);
    ro.observe(this.el);
    this.schedule();
    return () => {
      this.disposed = true;
      ro.disconnect();
      this.store.listeners.delete(listener);
      for (const n of names) this.model.off(`change:${n}`, onMeta);
      for (const n of ["run_ids", "configs"]) this.model.off(`change:${n}`, onRuns);
      for (const plot of this.plots.values()) plot.destroy();
      if (hiddenStyle) hiddenStyle.remove();
    };
  }
}
