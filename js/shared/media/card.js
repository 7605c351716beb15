// What every media card shares (docs/media.md, "The cards"): its frame (a header with the tag, a panel per run side
// by side), the step label, a step slider, and errors in the Portal's words. The DOM is built with shared/dom.js's
// h(); nothing here knows the page it is on: reads and the step cursor are passed in.
import { h } from "../dom.js";
import { formatNumber } from "../format.js";

/** "step 1,200", or "step 1,200 (nearest to 1,234)" when the card shows another step than the one asked for. */
export function stepLabel(step, requested = step) {
  if (step === null || step === undefined) return "";
  const shown = `step ${formatNumber(step)}`;
  return requested === null || requested === undefined || Number(requested) === Number(step) ? shown
    : `${shown} (nearest to ${formatNumber(requested)})`;
}

/** An error as the card shows it: the Portal's message (a StellarError's, or any Error's), never a stack. */
export function errorText(err) {
  return String(err?.message || err || "the read failed");
}

/**
 * A card's frame: `<section class="media-card media-{kind}-card" data-tag data-kind>` with the tag as its title,
 * `controls` after it, and one panel per run of `runs` ([{ key, label, color, missing }]); a run marked `missing`
 * gets a panel saying it has no such tag. Returns { el, head, panels: Map key → panel } where a panel is
 * { el, label, step, body, error } (step: the step label, body: what the card draws, error: its words).
 */
export function cardFrame(kind, tag, runs, controls = []) {
  const panels = new Map();
  const row = h("div", { class: "media-panels", "data-runs": String(runs.length) });
  for (const run of runs) {
    const step = h("span", { class: "media-step" });
    const error = h("p", { class: "media-error", role: "alert", hidden: true });
    const body = h("div", { class: "media-body" });
    const label = runs.length > 1 || run.label
      ? h("div", { class: "media-run" }, h("span", { class: "media-swatch", style: `background:${run.color || "#888"}` }),
        h("span", { class: "media-run-label", text: run.label || run.key }))
      : null;
    const el = h("div", { class: "media-panel", "data-run": run.key, "data-state": run.missing ? "missing" : "idle" },
      label, step, error, body);
    if (run.missing) body.append(h("p", { class: "media-note", text: `no ${kind} tag "${tag}" in this run` }));
    row.append(el);
    panels.set(run.key, { el, label, step, body, error, run });
  }
  const head = h("div", { class: "media-card-head" }, h("h3", { class: "media-tag", text: tag }), ...controls);
  const el = h("section", { class: `media-card media-${kind}-card`, "data-tag": tag, "data-kind": kind,
    "data-state": "idle" }, head, row);
  return { el, head, panels, row };
}

/** Shows `err` in `panel` (clearing what it drew); `null` clears the error. */
export function showPanelError(panel, err) {
  panel.error.hidden = err === null;
  panel.error.textContent = err === null ? "" : errorText(err);
  if (err !== null) {
    panel.el.dataset.state = "error";
    panel.step.textContent = "";
  }
}

/** A card's state from its panels': "error" if every panel failed, "ready" when none is still loading. */
export function cardState(panels) {
  const states = [...panels.values()].map((p) => p.el.dataset.state);
  if (states.some((s) => s === "loading")) return "loading";
  if (states.length && states.every((s) => s === "error" || s === "missing")) {
    return states.some((s) => s === "error") ? "error" : "ready";
  }
  return "ready";
}

/**
 * A step slider over [min, max] (one stop per step: a tag's steps need not be evenly spaced, the reads answer the
 * nearest): moving it calls `onStep(step)`; `set(step)` moves it without calling. Returns { el, input, set }.
 */
export function stepSlider(min, max, onStep) {
  const input = h("input", { type: "range", class: "media-slider", min: String(min), max: String(max), step: "1",
    value: String(min), "aria-label": "step" });
  input.addEventListener("input", () => onStep(Number(input.value)));
  const el = h("label", { class: "media-slider-box", title: "move the step cursor of every card" }, input);
  return {
    el,
    input,
    set(step) {
      const clamped = Math.min(Number(max), Math.max(Number(min), Number(step)));
      input.value = String(clamped);
    },
  };
}
