// What every Stellar page starts from: the config the Portal put in the page, the Portal's root URL, the
// token from the address, and the page's state (window.__stellar, which the UI tests read).
import { parseRunRef } from "../shared/run_ref.js";
import { loadAxis } from "../shared/time_axis.js";
import { MAX_TARGETS, decodeRunView } from "../shared/view_state.js";

export const config = JSON.parse(document.getElementById("stellar-config").textContent);
/** The Portal's root, relative to the page (so the pages work at the Portal's origin and behind Jupyter's proxy). */
export const root = new URL(config.root, window.location.href);
export const main = document.getElementById("stellar");

// A token in the page URL authenticates this page's API calls; the Portal also turns it into a
// cookie. It is dropped from the address bar so that it does not end up in bookmarks or screenshots.
const pageParams = new URLSearchParams(window.location.search);
export const urlToken = pageParams.get("token");
if (urlToken !== null) {
  pageParams.delete("token");
  const query = pageParams.toString();
  window.history.replaceState(null, "", window.location.pathname + (query ? `?${query}` : "") + window.location.hash);
}

// The run/compare page's view comes from its address (shared/view_state.js); what the address gets wrong is
// ignored and said (state.addressNotices), never a blank page. An offline export carries its view in its config.
const address = config.offline ? new URLSearchParams(config.offline.query) : pageParams;
const { view, notices: addressNotices } = config.mode === "runs" ? decodeRunView(address, loadAxis())
  : { view: decodeRunView("").view, notices: [] };

export const state = {
  mode: config.mode,
  targets: config.targets.slice(0, MAX_TARGETS),
  project: config.project,
  source: config.source || null, // ?source= of the page, sent with every read it makes
  ready: false,
  errors: [],
  runs: {},
  metrics: {},
  charts: {},
  smoothing: view.smoothing,
  logY: view.logY,
  xAxis: view.xAxis, // step | relative | wall | metric:<name>: the address's, else as last chosen in this browser
  aggregate: view.aggregate, // "" (each run its line) | mean | median: compared runs as one line with a band
  band: view.band, // minmax | std | none
  search: view.search, // the metric search box's text
  pins: view.pins, // pinned metrics, in the order pinned
  zoom: view.zoom, // metric → [lo, hi] on its x axis (wall time in epoch ms, relative time in seconds)
  addressNotices,
  offline: config.offline || null, // a static export: the reads answered from what it carries (api.js)
  requests: [],
  onlyDiffering: view.onlyDiffering, // the compare page's config lines: only the keys that differ between the runs
  importance: view.importance, // the parameter-importance panel's { metric, reduction } ("" metric: the first)
  step: view.step, // the media cards' step cursor (null: each card shows its tag's last step)
  cursor: null, // the page's step cursor (shared/step_cursor.js), set by the run page
};
window.__stellar = state;

/** A compared run's id and project as the address names it (`run` or `project/run`: shared/run_ref.js). */
export function runRef(key) {
  return parseRunRef(key, state.project);
}
