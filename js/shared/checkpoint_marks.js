// A run's checkpoints and retries as markers along the top of a metric's plot (the pane and the run page): a
// small triangle at each checkpoint's step, hover showing its path and size; a diamond where a retry resumed.
// Runs compared on one plot each get their markers in their own colour.
import { formatNumber } from "./format.js";

export const CHECKPOINT_COLOR = "#2a9d8f";
export const RETRY_COLOR = "#e76f51";
const TOP = 0.9; // on the hidden 0..1 overlay axis (yaxis2): near the top, below plotly's mode bar; non-finite ✕ marks sit at the bottom

/** 1234567 → "1.2 MB" (powers of 1000, as file managers show sizes). */
export function formatBytes(n) {
  if (n === undefined || n === null || !Number.isFinite(Number(n))) return "size unknown";
  const units = ["B", "kB", "MB", "GB", "TB", "PB"];
  let value = Number(n);
  let i = 0;
  while (value >= 1000 && i < units.length - 1) {
    value /= 1000;
    i += 1;
  }
  return i === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[i]}`;
}

/** The hover text of one checkpoint. */
export function checkpointText(c) {
  const gone = c.deleted ? " (deleted)" : "";
  return `checkpoint at step ${formatNumber(c.step)}${gone}<br>${c.uri}<br>${formatBytes(c.size_bytes)}`;
}

/** The hover text of one retry. */
export function retryText(r) {
  const attempt = r.attempt ? ` ${r.attempt}${r.max_retries ? `/${r.max_retries}` : ""}` : "";
  const from = r.resume_from ? `<br>resumed from ${r.resume_from}` : "";
  return `retry${attempt} at step ${formatNumber(r.step)}${from}`;
}

/**
 * Plotly traces of the checkpoints and retries that carry a step (`answer` is the Portal's
 * /runs/{run_id}/checkpoints body, or null), on the overlay axis `y2`. `xOf(steps)` maps steps to the plot's x
 * values (the identity on a step axis). `run` names the traces (meta.role "checkpoints" / "retries").
 * `color` (runs compared on one plot): the markers take the run's colour, the retry diamond keeps a retry-coloured
 * outline, and each hover names the run; without it, the fixed checkpoint and retry colours.
 */
export function checkpointTraces(answer, xOf = (steps) => steps, run = "", color = null) {
  if (!answer) return [];
  const out = [];
  const who = color && run ? `${run}: ` : "";
  const saved = (answer.checkpoints || []).filter((c) => c.step !== null && c.step !== undefined);
  if (saved.length) {
    out.push({
      type: "scatter", mode: "markers", name: `${run} checkpoints`.trim(), showlegend: false, yaxis: "y2",
      cliponaxis: false, x: xOf(saved.map((c) => c.step)), y: saved.map(() => TOP),
      text: saved.map((c) => who + checkpointText(c)), hovertemplate: "%{text}<extra></extra>", hoverinfo: "text",
      marker: { symbol: saved.map((c) => (c.deleted ? "triangle-down-open" : "triangle-down")), size: 9,
        color: color || CHECKPOINT_COLOR, line: { width: 1, color: color || CHECKPOINT_COLOR } },
      meta: { role: "checkpoints", runId: run, steps: saved.map((c) => c.step) },
    });
  }
  const retries = (answer.retries || []).filter((r) => r.step !== null && r.step !== undefined);
  if (retries.length) {
    out.push({
      type: "scatter", mode: "markers", name: `${run} retries`.trim(), showlegend: false, yaxis: "y2",
      cliponaxis: false, x: xOf(retries.map((r) => r.step)), y: retries.map(() => TOP),
      text: retries.map((r) => who + retryText(r)), hovertemplate: "%{text}<extra></extra>", hoverinfo: "text",
      marker: { symbol: "diamond-wide", size: 12, color: color || RETRY_COLOR,
        line: { width: color ? 2 : 1, color: RETRY_COLOR } },
      meta: { role: "retries", runId: run, steps: retries.map((r) => r.step) },
    });
  }
  return out;
}
