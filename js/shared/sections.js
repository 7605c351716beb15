// How a wide run's metrics are grouped, ordered and filtered: the same rule in the loss pane and on the Stellar
// run page (written down in docs/ "Runs with many metrics").
//
// A metric's section is its name up to the first "/" ("train/loss" → "train"; no "/" → "", shown as "metrics").
// Sections come in this order: "Pinned" (the metrics the user pinned), "Loss" (every other loss-like metric: its
// name contains "loss"), then the name sections alphabetically, "system" last. A metric is in exactly one
// section (Pinned before Loss before its name's), so it has one plot. A section of more than SECTION_OPEN_MAX
// metrics starts collapsed unless the user opened it; "system" (the sidecar's system metrics) starts collapsed
// whatever its size, as W&B's and MLflow's system charts sit apart from the model's (a search opens it as any).

import { formatNumber } from "./format.js";

export const PINNED = "Pinned";
export const LOSS = "Loss";
export const SECTION_OPEN_MAX = 6;

/** Loss-like: the name contains "loss", in any case. */
export function isLossLike(name) {
  return /loss/i.test(String(name));
}

/** The name up to its first "/", "" for a name without one. */
export function sectionOf(name) {
  const s = String(name);
  const slash = s.indexOf("/");
  return slash < 0 ? "" : s.slice(0, slash);
}

/** What a section's header calls it. */
export function sectionTitle(key) {
  return key === "" ? "metrics" : key;
}

/**
 * The search box's rule, TensorBoard's: the text is a case-insensitive regular expression over the metric name
 * (written bare, or between slashes: "/^train\/.*norm$/"); text that is not a valid expression is matched as a
 * plain substring, in any case. Returns { mode: "all" | "regex" | "substring", test(name) → bool, error }.
 */
export function compileFilter(text) {
  const raw = String(text ?? "").trim();
  if (!raw) return { mode: "all", test: () => true, error: null };
  const slashed = raw.length >= 2 && raw.startsWith("/") && raw.endsWith("/");
  const source = slashed ? raw.slice(1, -1) : raw;
  try {
    const re = new RegExp(source, "i");
    return { mode: "regex", test: (name) => re.test(String(name)), error: null };
  } catch (err) {
    const needle = source.toLowerCase();
    return { mode: "substring", test: (name) => String(name).toLowerCase().includes(needle), error: err.message };
  }
}

function nameRank(key) {
  return key === "system" ? 1 : 0;
}

/**
 * The sections to show: [{ key, title, metrics, total, open }] in display order. `metrics` is every name (in the
 * order given, kept within a section, except that "loss" itself leads the Loss section); `pinned` the pinned
 * names; `filter` the search text; `open` the user's {section: bool}. `metrics` of a section are those matching
 * the filter, `total` all it holds; a section with no match is left out while a filter is set.
 */
export function buildSections(metrics, { pinned = [], filter = "", open = {} } = {}) {
  const match = compileFilter(filter);
  const pinnedSet = new Set(pinned);
  const groups = new Map(); // key → { all: [], shown: [] }
  const add = (key, name) => {
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { all: [], shown: [] }));
    g.all.push(name);
    if (match.test(name)) g.shown.push(name);
  };
  const seen = new Set();
  // Pinned in the order the user pinned them; a pinned name the run does not (yet) have is not shown.
  const present = new Set(metrics);
  for (const name of pinned) if (present.has(name) && !seen.has(name)) { seen.add(name); add(PINNED, name); }
  for (const name of metrics) {
    if (seen.has(name)) continue;
    seen.add(name);
    if (pinnedSet.has(name)) continue;
    add(isLossLike(name) ? LOSS : sectionOf(name), name);
  }
  const loss = groups.get(LOSS);
  if (loss) {
    const lead = (list) => (list.includes("loss") ? ["loss", ...list.filter((n) => n !== "loss")] : list);
    loss.all = lead(loss.all);
    loss.shown = lead(loss.shown);
  }
  const named = [...groups.keys()].filter((k) => k !== PINNED && k !== LOSS)
    .sort((a, b) => nameRank(a) - nameRank(b) || (a < b ? -1 : a > b ? 1 : 0));
  const order = [...(groups.has(PINNED) ? [PINNED] : []), ...(groups.has(LOSS) ? [LOSS] : []), ...named];
  const out = [];
  for (const key of order) {
    const g = groups.get(key);
    if (match.mode !== "all" && !g.shown.length) continue;
    const isOpen = typeof open[key] === "boolean" ? open[key]
      : g.shown.length <= SECTION_OPEN_MAX && (key !== "system" || match.mode !== "all");
    out.push({ key, title: key === PINNED || key === LOSS ? key : sectionTitle(key), metrics: g.shown,
      total: g.all.length, open: isOpen });
  }
  return out;
}

/** A section header's count: "12 metrics", or "3 of 12 metrics" while a filter hides some. */
export function countText(section) {
  const unit = section.total === 1 ? "metric" : "metrics";
  const total = formatNumber(section.total);
  return section.metrics.length === section.total ? `${total} ${unit}`
    : `${formatNumber(section.metrics.length)} of ${total} ${unit}`;
}
