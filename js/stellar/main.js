// The Stellar pages' entry (bundled into taunotebook/static/stellar/stellar.js): the run/compare page or the
// runs listing, drawn from the Portal's v2 Stellar API.
//
// Everything is fetched same-origin with paths relative to the page's root (config.root), so the pages work
// both at the Portal's own origin and behind jupyter-server-proxy at {base_url}tau-portal/.
// Test hooks: window.__stellar (state), data-state / data-points / data-non-finite on elements.
import Plotly from "../plotly/index.js";
import { listingPage } from "./listing_page.js";
import { showError } from "./notices.js";
import { main, state } from "./page.js";
import { runPage } from "./run_page.js";

// The page's plotly.js as a global, as the full plotly.min.js once was: for the console and the UI tests.
window.Plotly = Plotly;

async function start() {
  try {
    if (state.mode === "runs") await runPage();
    else await listingPage();
  } catch (err) {
    showError(`The page failed: ${err.message || err}`);
    state.ready = true;
    main.dataset.state = "error";
  }
}

start();
