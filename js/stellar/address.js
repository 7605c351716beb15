// The page's address follows its view: every change of a control, a pin, a search or a zoom replaces the
// address (history.replaceState: no history entry per slider move), so the address bar is always a link to
// what is on screen; opening another page is a navigation of its own (a history entry).
import { h } from "../shared/dom.js";
import { addressOf, encodeRunView } from "../shared/view_state.js";
import { state } from "./page.js";

/** The query of the view on screen (run/compare page). */
export function currentQuery() {
  return encodeRunView(state, { project: state.project, source: state.source });
}

const WRITE_EVERY_MS = 100; // browsers throttle a page that replaces its address hundreds of times (a slider drag)
let lastWrite = 0;
let pending = 0;

function write() {
  pending = 0;
  lastWrite = Date.now();
  window.history.replaceState(null, "", addressOf(window.location.pathname, currentQuery(), window.location.hash));
}

/** The address bar follows the view (nothing to do in an offline export: its address is a file): at once, or at
 *  most every WRITE_EVERY_MS while changes come faster, the last change always written. */
export function writeView() {
  if (state.mode !== "runs" || state.offline) return;
  const wait = lastWrite + WRITE_EVERY_MS - Date.now();
  if (wait <= 0 && !pending) write();
  else if (!pending) pending = setTimeout(write, Math.max(0, wait));
}

/** The link to the view on screen. */
export function viewLink() {
  if (state.mode === "runs") return new URL(addressOf(window.location.pathname, currentQuery()), window.location.href).href;
  return window.location.href;
}

/** A "copy link" button: the view's address to the clipboard, else shown selected to copy by hand. */
export function copyLinkControl() {
  if (state.offline) return null; // a file's address is no link to share: the export names the page it came from
  const done = h("span", { class: "stellar-note", id: "stellar-copy-done", role: "status" });
  const button = h("button", { type: "button", id: "stellar-copy-link", title: "copy a link to this view (runs, metrics, search, smoothing, axes, zoom)", text: "Copy link" });
  button.addEventListener("click", async () => {
    const link = viewLink();
    button.dataset.link = link;
    try {
      await navigator.clipboard.writeText(link);
      done.textContent = "link copied";
    } catch {
      // No clipboard (an http page other than localhost, or refused): the link, selected, to copy by hand.
      const box = h("input", { type: "text", id: "stellar-copy-box", value: link, readonly: true, size: 60 });
      done.replaceChildren(box);
      box.select();
    }
  });
  return h("span", { class: "stellar-copy" }, button, done);
}

/** What the address got wrong, said at the page's top (the page is drawn with the rest of it). */
export function showAddressNotices(box) {
  if (!state.addressNotices.length) return;
  const list = h("ul", { class: "stellar-note", id: "stellar-address-notices", role: "status" });
  for (const text of state.addressNotices) list.append(h("li", { text: `Address: ${text}` }));
  box.append(list);
}
