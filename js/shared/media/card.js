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

/**
 * The error a read rejects with when a newer read of the same panel replaced it (the pane's feed answers one read per
 * panel): not the Portal's words, and never shown as an error (`isSuperseded`).
 */
export function supersededError() {
  const err = new Error("superseded");
  err.name = "SupersededError";
  return err;
}

export function isSuperseded(err) {
  return err?.name === "SupersededError";
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
 * nearest): moving it calls `onStep(step)`; `set(step)` moves it without calling; `setRange(min, max)` widens or
 * narrows it (a live tag's new steps), keeping the step it shows. Returns { el, input, set, setRange }.
 */
export function stepSlider(min, max, onStep) {
  let lo = Number(min);
  let hi = Number(max);
  let shown = lo;
  const input = h("input", { type: "range", class: "media-slider", min: String(lo), max: String(hi), step: "1",
    value: String(lo), "aria-label": "step" });
  input.addEventListener("input", () => {
    shown = Number(input.value);
    onStep(shown);
  });
  const el = h("label", { class: "media-slider-box", title: "move the step cursor of every card" }, input);
  const place = () => {
    input.value = String(Math.min(hi, Math.max(lo, shown)));
  };
  return {
    el,
    input,
    set(step) {
      shown = Number(step);
      place();
    },
    setRange(newMin, newMax) {
      if (!Number.isFinite(Number(newMin)) || !Number.isFinite(Number(newMax))) return;
      lo = Number(newMin);
      hi = Math.max(lo, Number(newMax));
      input.setAttribute("min", String(lo));
      input.setAttribute("max", String(hi));
      place();
    },
  };
}

/**
 * A card of `kind` whose panels each show one read at the step nearest the cursor (the image and text cards):
 * a slider over `range` that tells `onStep`, `fetch(runKey, step)` (a Promise of the route's answer) per run, and
 * `draw(panel, answer, step)` once an answer arrives that no later step superseded; the step shown is labelled
 * and a failed read shows the Portal's words in its panel. Returns { el, panels, slider, setRange(range),
 * show(step) }.
 */
export function steppedCard({ kind, tag, runs, range, fetch, onStep, draw }) {
  const slider = stepSlider(range.step_min, range.step_max, (step) => onStep(step));
  const frame = cardFrame(kind, tag, runs, [slider.el]);
  const generations = new Map();
  async function showRun(panel, step) {
    const generation = (generations.get(panel.run.key) || 0) + 1;
    generations.set(panel.run.key, generation);
    panel.el.dataset.state = "loading";
    let answer;
    try {
      answer = await fetch(panel.run.key, step);
    } catch (err) {
      if (generations.get(panel.run.key) !== generation || isSuperseded(err)) return;
      showPanelError(panel, err);
      panel.body.replaceChildren();
      return;
    }
    if (generations.get(panel.run.key) !== generation) return; // a newer step superseded this one
    showPanelError(panel, null);
    panel.step.textContent = stepLabel(answer.step, step);
    panel.el.dataset.step = String(answer.step);
    panel.el.dataset.requested = String(step);
    draw(panel, answer, step);
    panel.el.dataset.state = "ready";
  }
  return {
    el: frame.el,
    panels: frame.panels,
    slider,
    /** The tag's steps over the runs grew (or shrank): the slider runs over `range` from now on. */
    setRange(next) {
      slider.setRange(next.step_min, next.step_max);
    },
    async show(step) {
      slider.set(step);
      frame.el.dataset.state = "loading";
      frame.el.dataset.requested = String(step);
      await Promise.all([...frame.panels.values()].filter((p) => !p.run.missing).map((p) => showRun(p, step)));
      frame.el.dataset.state = cardState(frame.panels);
    },
  };
}
