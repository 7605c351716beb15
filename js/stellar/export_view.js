// The run page's "Export HTML" button: the view on screen as one self-contained file (shared/export_html.js),
// made from the reads the page made (api.js's recorded answers: the reduced series it draws, at the fidelity it
// has them), the page's own script and style, the runs' cards and the time of export.
import { h } from "../shared/dom.js";
import { exportHtml } from "../shared/export_html.js";
import { portalUrl } from "../shared/urls.js";
import { currentQuery, viewLink } from "./address.js";
import { recorded } from "./api.js";
import { root, state } from "./page.js";

export const OFFLINE_BUNDLE = "stellar-offline.js"; // the page's script in one file (no chunks to load)

async function asset(name) {
  const response = await fetch(portalUrl(root, ["static", "stellar", name]), { credentials: "same-origin" });
  if (!response.ok) throw new Error(`static/stellar/${name} could not be read (HTTP ${response.status})`);
  return response.text();
}

/** The export of the page as it is now: { html, name }. */
export async function buildExport() {
  const [script, css] = await Promise.all([asset(OFFLINE_BUNDLE), asset("stellar.css")]);
  // The charts the page has drawn (fetched): the export draws those, not the ones never scrolled to.
  const metrics = Object.values(state.charts).filter((c) => c.fetches > 0).map((c) => c.metric);
  const exportedAt = new Date().toISOString();
  const config = {
    mode: "runs", root: "./", targets: state.targets, project: state.project, source: state.source,
    offline: { query: currentQuery().toString(), metrics, responses: Object.fromEntries(recorded), exportedAt, link: viewLink() },
  };
  const heading = state.targets.join(" vs ");
  const stamp = exportedAt.replace(/[:.]/g, "-");
  const name = `${state.targets.length > 1 ? `compare-${state.targets.length}-runs` : state.targets[0]}-${stamp}.html`.replace(/[\\/]/g, "_");
  return { html: exportHtml({ config, script, css, heading }), name };
}

/** The button: builds the file and saves it (a download). */
export function exportControl() {
  if (state.offline) {
    const from = state.offline.link ? h("a", { href: state.offline.link, id: "stellar-export-source", text: "the live page" }) : null;
    return h("span", { class: "stellar-note", id: "stellar-offline-note" },
      `Static export of ${state.offline.exportedAt}; zooming shows the points it holds.`,
      from ? " Exported from " : "", from, from ? " (its Portal's token needed)." : "");
  }
  const done = h("span", { class: "stellar-note", id: "stellar-export-done", role: "status" });
  const button = h("button", { type: "button", id: "stellar-export", text: "Export HTML",
    title: "save this view as one HTML file that opens offline (the charts as drawn, the runs, their config)" });
  button.addEventListener("click", async () => {
    button.disabled = true;
    done.textContent = "exporting…";
    try {
      const { html, name } = await buildExport();
      const url = URL.createObjectURL(new Blob([html], { type: "text/html" }));
      const link = h("a", { href: url, download: name, id: "stellar-export-file", text: name });
      done.replaceChildren("saved ", link);
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      done.textContent = `The export failed: ${err.message || err}`;
    } finally {
      button.disabled = false;
    }
  });
  return h("span", { class: "stellar-export" }, button, done);
}
