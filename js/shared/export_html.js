// A Stellar view as one self-contained HTML file (docs/comparing-runs.md, "Exporting a view"): the page's own
// script and style inlined, and the reads the page made with their answers, so the file draws the same charts
// with no network. The run page's "Export HTML" button builds it from what it has drawn; `taunotebook
// export-view` builds the same file in Python (taunotebook/export_view.py), keyed the same way (readKey).

import exportBudget from "../../taunotebook/export_budget.json" with { type: "json" };

// Query parameters that do not change which data a read returns to the page (how much it is reduced is what the
// page asked for when it was drawn; the project and source are the page's; inline_thumbnails is only how an answer
// carries small images' bytes).
const UNKEYED = new Set(["inline_thumbnails", "max_points", "project", "source", "token"]);

/**
 * The key of a read in an export: its path after the Portal's root, percent-decoded, and its query without
 * UNKEYED parameters, sorted. `params` is a URLSearchParams.
 */
export function readKey(path, params) {
  const entries = [...params].filter(([k]) => !UNKEYED.has(k)).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return JSON.stringify([decodeURIComponent(path), entries]);
}

/** Text that can stand inside a <script> element: no "</script" or "<!--" can end or bend it. */
export function scriptText(text) {
  return String(text).replace(/<(\/script|!--)/gi, "\\x3C$1");
}

/**
 * The images an export carries at most: per tag and run at its step, and their bytes in all (both exports: the
 * numbers live in taunotebook/export_budget.json, which `taunotebook export-view` reads too).
 */
export const MAX_EXPORT_IMAGES_PER_TAG = exportBudget.max_images_per_tag;
export const MAX_EXPORT_IMAGE_BYTES = exportBudget.max_image_bytes;

const STEP_PARAMS = new Set(["step", "step_min", "step_max", "max_steps", "keep"]);

/**
 * A media read at a step the export does not carry (a card's slider, a click on a curve): the answer it carries for
 * the same tag at the step nearest the one asked (an image or text card's, or a histogram's range read), so the card
 * shows that step and labels it ("step 20 (nearest to 10)"); null when it carries none.
 */
export function nearestCarried(answers, path, params) {
  if (!/\/(images|text|histograms)$/.test(path) || !params.has("tag")) return null;
  // The step a read is about: a histogram card's read of the gap around the cursor keeps it.
  const wanted = Number(params.get("step") ?? params.get("keep") ?? params.get("step_min") ?? params.get("step_max"));
  if (!Number.isFinite(wanted)) return null;
  const withoutSteps = (entries) => readKey(path, new URLSearchParams(entries.filter(([k]) => !STEP_PARAMS.has(k))));
  const same = withoutSteps([...params]);
  let best = null;
  for (const [key, answer] of Object.entries(answers)) {
    let parsed;
    try {
      parsed = JSON.parse(key);
    } catch {
      continue;
    }
    const [p, entries] = parsed;
    if (p !== decodeURIComponent(path) || !entries.some(([k]) => STEP_PARAMS.has(k)) || withoutSteps(entries) !== same) continue;
    const at = Number(answer?.step ?? answer?.steps?.[0]);
    if (!Number.isFinite(at)) continue;
    const closer = !best || Math.abs(at - wanted) < Math.abs(best.at - wanted) || (Math.abs(at - wanted) === Math.abs(best.at - wanted) && at < best.at);
    if (closer) best = { at, answer };
  }
  if (!best) return null;
  return "requested_step" in best.answer ? { ...best.answer, requested_step: wanted } : best.answer;
}

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

/**
 * The export's page with its slots: @@TITLE@@, @@CSS@@, @@CONFIG@@, @@HEADING@@, @@EXPORTED_AT@@, @@SCRIPT@@, each
 * filled once (exportHtml here; `taunotebook export-view` fills the copy the build writes beside the bundles,
 * static/stellar/export_template.html, so the two exports are one page).
 */
export const EXPORT_TEMPLATE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:">
<title>@@TITLE@@</title>
<style>@@CSS@@</style>
<script type="application/json" id="stellar-config">@@CONFIG@@</script>
</head>
<body>
<header class="stellar-header">
  <span class="stellar-home">Stellar</span>
  <span class="stellar-title" id="stellar-title">@@HEADING@@</span>
  <span class="stellar-note" id="stellar-exported" data-exported-at="@@EXPORTED_AT@@">exported @@EXPORTED_AT@@ · a static copy: the charts hold the points the page had drawn</span>
</header>
<main id="stellar" data-mode="runs" data-state="loading">
  <p class="stellar-loading" id="stellar-loading">Loading…</p>
</main>
<script>@@SCRIPT@@</script>
</body>
</html>
`;

/** EXPORT_TEMPLATE with its slots filled from `values` (escaped already), in one pass: no value is read as a slot. */
export function fillTemplate(template, values) {
  return template.replace(/@@([A-Z_]+)@@/g, (slot, name) => (name in values ? values[name] : slot));
}

/**
 * The export's HTML. `config` is the page config (mode, targets, project, source) with `offline`:
 * { query, metrics, responses, exportedAt, link }; `script` the page bundle (stellar-offline.js), `css` its style.
 */
export function exportHtml({ config, script, css, heading }) {
  return fillTemplate(EXPORT_TEMPLATE, {
    TITLE: escapeHtml(`Stellar · ${heading}`),
    CSS: String(css).replace(/<\//g, "<\\/"),
    CONFIG: JSON.stringify(config).replace(/</g, "\\u003c"),
    HEADING: escapeHtml(heading),
    EXPORTED_AT: escapeHtml(config.offline.exportedAt),
    SCRIPT: scriptText(script),
  });
}
