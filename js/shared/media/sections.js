// How a view's media tags are grouped, filtered and counted (docs/media.md, "The cards"): a section per kind
// (histograms, images, text), tags by name, the search box's rule of the metric sections (shared/sections.js).
import { formatNumber } from "../format.js";
import { compileFilter } from "../sections.js";

export const KINDS = ["histograms", "images", "text"];
const TITLES = { histograms: "Histograms", images: "Images", text: "Text" };
const UNITS = { histograms: "histogram tag", images: "image tag", text: "text tag" };

/**
 * The Media section's sections from the runs' tags: [{ key: kind, title, metrics: card keys, total, open }] in
 * KINDS order, a card key being `${kind}/${tag}`; tags whose name the search `filter` does not match are left out
 * (a kind with none left out while a filter is set). `tagsByRun` is Map run → [{ kind, tag, … }].
 */
export function mediaSections(tagsByRun, { filter = "", open = {} } = {}) {
  const match = compileFilter(filter);
  const out = [];
  for (const kind of KINDS) {
    const all = new Set();
    for (const tags of tagsByRun.values()) for (const t of tags) if (t.kind === kind) all.add(t.tag);
    if (!all.size) continue;
    const sorted = [...all].sort();
    const shown = sorted.filter((tag) => match.test(tag));
    if (match.mode !== "all" && !shown.length) continue;
    out.push({ key: kind, title: TITLES[kind], metrics: shown.map((tag) => `${kind}/${tag}`), total: sorted.length,
      open: typeof open[kind] === "boolean" ? open[kind] : true });
  }
  return out;
}

/** A media section header's count: "3 image tags", or "1 of 3 image tags" while the search hides some. */
export function mediaCountText(section) {
  const unit = UNITS[section.key] || "tag";
  const plural = section.total === 1 ? unit : `${unit}s`;
  return section.metrics.length === section.total ? `${formatNumber(section.total)} ${plural}`
    : `${formatNumber(section.metrics.length)} of ${formatNumber(section.total)} ${plural}`;
}

/** A card's step range over the runs that have its tag: { step_min, step_max }. */
export function tagRange(tagsByRun, kind, tag) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const tags of tagsByRun.values()) {
    for (const t of tags) {
      if (t.kind !== kind || t.tag !== tag) continue;
      lo = Math.min(lo, t.step_min);
      hi = Math.max(hi, t.step_max);
    }
  }
  return { step_min: lo, step_max: hi };
}
