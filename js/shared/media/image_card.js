// An image tag's card (docs/media.md, "The cards"): every image the tag holds at the step nearest the cursor, for
// each run side by side, as thumbnails with their captions; the step shown is labelled ("step 1,200 (nearest to
// 1,234)"), a thumbnail opens the full image, and a slider over the tag's steps moves the cursor. Nothing sampled:
// every image of the step is shown.
import { h } from "../dom.js";
import { formatNumber } from "../format.js";
import { steppedCard } from "./card.js";

/** Images of a step whose thumbnails load as soon as they are drawn (the rest of a large step when scrolled to). */
export const EAGER_IMAGES = 8;

/** "64×48" (or "" when the size is unknown). */
export function sizeText(image) {
  return image.width && image.height ? `${image.width}×${image.height}` : "";
}

/**
 * The figure of one image of an `…/images` answer: a link to the full image (`resolve(url)`: the page's way to
 * make the Portal's path a URL) around its thumbnail, and its caption. Every string goes in as text. `open(image)`,
 * when given, is what a click on the link does instead (a page that holds only the thumbnails asks for the full
 * bytes, as the loss pane does).
 */
export function imageFigure(image, resolve = (u) => u, tag = "", open = null) {
  const full = image.url ? resolve(image.url) : "";
  const alt = image.caption || `${tag} #${image.index}`;
  // A small image that rode in the answer (`inline_thumbnails`) is drawn at once, without a request of its own;
  // the first few of a step load as soon as drawn (a card is created on screen), the rest when scrolled to.
  const img = h("img", { class: "media-thumb", src: resolve(image.thumbnail_data || image.thumbnail_url || image.url),
    alt, loading: image.index < EAGER_IMAGES ? "eager" : "lazy", "data-digest": image.digest || "" });
  const link = h("a", { class: "media-image-link", href: full || "#", target: "_blank", rel: "noopener",
    title: `open the full image${sizeText(image) ? ` (${sizeText(image)})` : ""}` }, img);
  if (open) {
    link.addEventListener("click", (event) => {
      event.preventDefault?.();
      open(image, link);
    });
  }
  const caption = h("figcaption", { class: "media-caption", text: image.caption || "" });
  return h("figure", { class: "media-image", "data-index": String(image.index) }, link, image.caption ? caption : null);
}

/**
 * A card for image tag `tag` of `runs` ([{ key, label, color, missing }]). `range` is { step_min, step_max } of the
 * tag over the runs (the slider's; `setRange(range)` when the tag grew), `fetchImages(runKey, step)` reads
 * `…/images?tag=&step=` (a Promise of its answer), `onStep(step)` is told when the slider moves (the caller moves
 * its cursor), `resolve(url, runKey)` makes an image path of run `runKey` a URL, and `openImage(image, runKey,
 * link)`, when given, opens an image's full bytes on a click of its link. `show(step)` draws every run's images at
 * the step nearest `step` (a Promise, settled when drawn).
 */
export function createImageCard({ tag, runs, range, fetchImages, onStep = () => {}, resolve = (u) => u,
  openImage = null }) {
  return steppedCard({ kind: "images", tag, runs, range, fetch: fetchImages, onStep, draw(panel, answer) {
    const images = answer.images || [];
    const open = openImage ? (image, link) => openImage(image, panel.run.key, link) : null;
    panel.el.dataset.images = String(images.length);
    panel.body.replaceChildren(
      h("div", { class: "media-images" },
        ...images.map((image) => imageFigure(image, (u) => resolve(u, panel.run.key), tag, open))),
      h("p", { class: "media-note", text: `${formatNumber(images.length)} image${images.length === 1 ? "" : "s"} at this step` }),
      // An export's answer whose budget left images out says so (taunotebook export-view).
      ...(answer.omitted ? [h("p", { class: "media-note media-omitted", text: String(answer.omitted) })] : []),
    );
  } });
}
