// What differs between runs: the hyperparameters whose values are not the same in every run, and a name for
// each run made of them (`lr=0.1` vs `lr=0.03`). One rule for the pane's legend, the compare page and the
// runs table.
//
// A run's config is its flattened fields ({"optimizer.lr": 0.1, "batch": 32}) or null when it has none.
// The rule:
// - only runs that have a config take part; with fewer than two there is nothing to tell apart;
// - a key differs when its value (as text, see valueText) is not the same in every such run, a run without
//   the key counting as a value of its own;
// - a key is shown by its shortest dotted suffix that no other differing key ends with (`lr`, unless both
//   `optimizer.lr` and `scheduler.lr` differ);
// - a run is named by its differing keys, alphabetically, at most MAX_LABEL_KEYS of them (then "+N more");
//   a run with no config, or when nothing differs, is named by its id; runs whose names come out the same
//   (the config does not tell them apart) get their id added.

export const MAX_LABEL_KEYS = 4;
export const MAX_LABEL_LENGTH = 80;
const MISSING = "\u0000missing";

/** A config value as text, the same everywhere it is shown: 0.1, 3e-7, 32, true, adam. */
export function valueText(value) {
  if (value === undefined) return "–";
  if (value === null) return "null";
  if (typeof value === "number") {
    if (Number.isNaN(value)) return "NaN";
    if (!Number.isFinite(value)) return value > 0 ? "+Inf" : "-Inf";
    if (Number.isInteger(value)) return String(value);
    return String(Number(value.toPrecision(6)));
  }
  if (typeof value === "string" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

function has(config, key) {
  return Object.prototype.hasOwnProperty.call(config, key);
}

/** The keys whose values are not the same in every run that has a config, sorted. `configs`: array of config|null. */
export function differingKeys(configs) {
  const present = configs.filter((c) => c && typeof c === "object");
  if (present.length < 2) return [];
  const keys = new Set();
  for (const config of present) for (const key of Object.keys(config)) keys.add(key);
  const out = [];
  for (const key of keys) {
    const first = has(present[0], key) ? valueText(present[0][key]) : MISSING;
    if (present.some((c) => (has(c, key) ? valueText(c[key]) : MISSING) !== first)) out.push(key);
  }
  return out.sort();
}

/** The keys every run with a config has with the same value, sorted (the runs table collapses them). */
export function constantKeys(configs) {
  const present = configs.filter((c) => c && typeof c === "object");
  if (!present.length) return [];
  const differing = new Set(differingKeys(configs));
  return Object.keys(present[0]).filter((key) => !differing.has(key) && present.every((c) => has(c, key))).sort();
}

/** key → the shortest dotted suffix of it that no other of `keys` ends with. */
export function shortKeys(keys) {
  const parts = keys.map((key) => key.split("."));
  const out = new Map();
  keys.forEach((key, i) => {
    let n = 1;
    for (; n < parts[i].length; n++) {
      const suffix = parts[i].slice(-n).join(".");
      const clash = keys.some((other, j) => j !== i && (other === suffix || other.endsWith(`.${suffix}`)));
      if (!clash) break;
    }
    out.set(key, parts[i].slice(-n).join("."));
  });
  return out;
}

/**
 * A name for each run by what differs: Map run id → {label, differing: [[shown key, value text]]}.
 * `configs` maps run id → config (an object or a Map); a missing entry is a run without config.
 */
export function runLabels(runIds, configs, { maxKeys = MAX_LABEL_KEYS, maxLength = MAX_LABEL_LENGTH } = {}) {
  const get = (runId) => (configs instanceof Map ? configs.get(runId) : configs?.[runId]) ?? null;
  const ids = [...new Set(runIds)];
  const keys = differingKeys(ids.map(get));
  const short = shortKeys(keys);
  const out = new Map();
  for (const runId of ids) {
    const config = get(runId);
    if (!config || !keys.length) {
      out.set(runId, { label: String(runId), differing: [] });
      continue;
    }
    const differing = keys.map((key) => [short.get(key), has(config, key) ? valueText(config[key]) : "–"]);
    const shown = differing.slice(0, maxKeys).map(([k, v]) => `${k}=${v}`);
    let label = shown.join(", ");
    if (differing.length > maxKeys) label += `, +${differing.length - maxKeys} more`;
    if (label.length > maxLength) label = `${label.slice(0, maxLength - 1)}…`;
    out.set(runId, { label, differing });
  }
  // Names the config does not tell apart get the run id, so no two runs drawn together share a name.
  const seen = new Map();
  for (const entry of out.values()) seen.set(entry.label, (seen.get(entry.label) || 0) + 1);
  for (const [runId, entry] of out) {
    if (seen.get(entry.label) > 1 && entry.label !== String(runId)) entry.label = `${entry.label} (${runId})`;
  }
  return out;
}

/**
 * A config's keys as a run's card lists them: those that differ between the compared runs first, then the rest,
 * each part alphabetically; with `onlyDiffering`, the differing ones alone (the compare page's toggle).
 * `differing`: a Set of keys.
 */
export function configKeys(config, differing, onlyDiffering = false) {
  if (!config || typeof config !== "object") return [];
  const keys = Object.keys(config).filter((key) => !onlyDiffering || differing.has(key));
  return keys.sort((a, b) => Number(differing.has(b)) - Number(differing.has(a)) || a.localeCompare(b));
}
