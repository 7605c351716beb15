// The run page's "Export HTML" button: the view on screen as one self-contained file (shared/export_html.js),
// made from the reads the page made (api.js's recorded answers: the reduced series it draws, at the fidelity it
// has them), the page's own script and style, the runs' cards and the time of export.
import { h } from "../shared/dom.js";
import { MAX_EXPORT_IMAGE_BYTES, MAX_EXPORT_IMAGES_PER_TAG, exportHtml } from "../shared/export_html.js";
import { portalUrl } from "../shared/urls.js";
import { currentQuery, viewLink } from "./address.js";
import { recorded } from "./api.js";
import { root, state, urlToken } from "./page.js";

export const OFFLINE_BUNDLE = "stellar-offline.js"; // the page's script in one file (no chunks to load)

async function asset(name) {
  const response = await fetch(portalUrl(root, ["static", "stellar", name]), { credentials: "same-origin" });
  if (!response.ok) throw new Error(`static/stellar/${name} could not be read (HTTP ${response.status})`);
  return response.text();
}

function dataUri(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

/**
 * The media cards the page has drawn, for the export: the image answers' thumbnails fetched and put in as data: URIs
 * (at most MAX_EXPORT_IMAGES_PER_TAG a tag and MAX_EXPORT_IMAGE_BYTES in all; an answer whose images were cut says so
 * in `omitted`), the full images linked on the Portal. Returns { media: card keys, left: words, responses }.
 */
async function exportMedia(responses) {
  const cards = state.media ? [...state.media.cards].filter(([, entry]) => entry.card).map(([key]) => key) : [];
  const left = [];
  let budget = MAX_EXPORT_IMAGE_BYTES;
  for (const [key, answer] of Object.entries(responses)) {
    const [path] = JSON.parse(key);
    if (!/\/images$/.test(path) || !Array.isArray(answer?.images)) continue;
    const kept = [];
    let over = 0;
    const past = Math.max(0, answer.images.length - MAX_EXPORT_IMAGES_PER_TAG);
    for (const image of answer.images.slice(0, MAX_EXPORT_IMAGES_PER_TAG)) {
      const full = state.media.imageUrl(answer.run_id, image.url);
      const thumb = new URL(state.media.imageUrl(answer.run_id, image.thumbnail_url || image.url));
      try {
        if (budget <= 0) throw new Error("over the budget");
        const response = await fetch(thumb, { credentials: "same-origin", headers: urlToken ? { Authorization: `Bearer ${urlToken}` } : {} });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const blob = await response.blob();
        if (blob.size > budget || !/^image\/(png|jpeg|gif)$/.test(blob.type)) throw new Error("over the budget");
        budget -= blob.size;
        kept.push({ ...image, thumbnail_url: await dataUri(blob), thumbnail_data: null, url: full }); // counted once
      } catch {
        over += 1;
      }
    }
    responses[key] = { ...answer, images: kept };
    if (past || over) {
      const why = [past ? `${past} past ${MAX_EXPORT_IMAGES_PER_TAG} a tag` : "",
        over ? `${over} over the export's ${Math.round(MAX_EXPORT_IMAGE_BYTES / 1048576)} MB of images or unreadable` : ""].filter(Boolean);
      const words = `${past + over} more image${past + over === 1 ? "" : "s"} of ${answer.tag} at step ${answer.step} are not in this export (${why.join("; ")})`;
      responses[key].omitted = `${words}: the live page has every one.`;
      left.push(`${words} (${answer.run_id})`);
    }
  }
  return { media: cards, left };
}

/** What the export's Media section says: the steps it carries, the budget, what it left out. */
function mediaNote(media, left) {
  if (!media.length) return "";
  return "This export carries the media cards the page had drawn, each at the step it showed: histogram bands over the steps, " +
    `the images as thumbnails (at most ${MAX_EXPORT_IMAGES_PER_TAG} a tag, ${Math.round(MAX_EXPORT_IMAGE_BYTES / 1048576)} MB in all) and the text; ` +
    `another step shows the nearest one it carries.${left.length ? ` Left out: ${left.join("; ")}.` : ""} Every step and every image: the live page (below).`;
}

/** The export of the page as it is now: { html, name }. */
export async function buildExport() {
  const [script, css] = await Promise.all([asset(OFFLINE_BUNDLE), asset("stellar.css")]);
  // The charts the page has drawn (fetched): the export draws those, not the ones never scrolled to.
  const metrics = Object.values(state.charts).filter((c) => c.fetches > 0).map((c) => c.metric);
  const exportedAt = new Date().toISOString();
  await state.media?.refreshStale(); // cards off screen when the cursor moved read its step now, for the replay
  const responses = Object.fromEntries(recorded);
  const { media, left } = await exportMedia(responses);
  const config = {
    mode: "runs", root: "./", targets: state.targets, project: state.project, source: state.source,
    offline: { query: currentQuery().toString(), metrics, responses, exportedAt, link: viewLink(), media,
      mediaNote: mediaNote(media, left) },
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
