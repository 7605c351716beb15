// What every Stellar page starts from: the config the Portal put in the page, the Portal's root URL, the
// token from the address, and the page's state (window.__stellar, which the UI tests read).
import { loadAxis } from "../shared/time_axis.js";

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

export const state = {
  mode: config.mode,
  targets: config.targets,
  project: config.project,
  source: config.source || null, // ?source= of the page, sent with every read it makes
  ready: false,
  errors: [],
  runs: {},
  metrics: {},
  charts: {},
  smoothing: 0,
  logY: false,
  xAxis: loadAxis(), // step | relative | wall | metric:<name>, as last chosen in this browser
  aggregate: "", // "" (each run its line) | mean | median: compared runs as one line with a band
  band: "minmax", // minmax | std | none
  requests: [],
};
window.__stellar = state;
