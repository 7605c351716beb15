// A run's notes, tags and sent notifications on its card: notes listed with author and time and an "add note"
// box, tags editable (the collector's own shown, not editable), the webhooks its wrap sent. Writes go through
// api.js's apiWrite (the page's write key in a header); a Portal without writes shows them read-only.
import { h } from "../shared/dom.js";
import { formatTime } from "../shared/format.js";
import { id } from "../shared/urls.js";
import { api, apiWrite, canWrite, explain, pageData } from "./api.js";

// The collector's tags (workspace, run status, importer provenance): written by it, never from a page.
const RESERVED = ["tau_", "tau.", "jsonl."];
export const isReservedTag = (key) => RESERVED.some((p) => key.startsWith(p));

function noteItem(note) {
  return h(
    "li",
    { class: "stellar-note-item", "data-observation-id": note.observation_id },
    h("div", { class: "stellar-note-meta" },
      h("span", { class: "stellar-note-author", text: note.author }), " · ",
      h("time", { datetime: note.created_at, title: note.created_at, text: formatTime(note.created_at) })),
    h("div", { class: "stellar-note-text", text: note.text }),
  );
}

function say(box, text, isError = false) {
  box.textContent = text;
  box.className = isError ? "stellar-error stellar-annotation-status" : "stellar-note stellar-annotation-status";
}

function tagsEditor(runId, tags, status) {
  const list = h("ul", { class: "stellar-tags", "data-run-id": runId });
  const draw = (current) => {
    list.replaceChildren();
    for (const [key, value] of Object.entries(current).sort(([a], [b]) => a.localeCompare(b))) {
      const chip = h("li", { class: "stellar-tag", "data-key": key },
        h("span", { class: "stellar-tag-text", text: value === "" ? key : `${key}=${value}` }));
      if (canWrite() && !isReservedTag(key)) {
        chip.append(h("button", {
          type: "button", class: "stellar-tag-remove", title: `remove the tag ${key}`, "aria-label": `remove ${key}`,
          text: "×",
          onclick: async () => {
            try {
              draw((await apiWrite("DELETE", ["runs", id(runId), "tags", id(key)])).tags);
              say(status, `Tag ${key} removed.`);
            } catch (err) {
              say(status, explain(err, `The tag ${key} could not be removed`), true);
            }
          },
        }));
      }
      list.append(chip);
    }
  };
  draw(tags);
  if (!canWrite()) return h("div", { class: "stellar-tags-box" }, list);
  const input = h("input", { type: "text", class: "stellar-tag-input", placeholder: "key=value", maxlength: "1200",
    "aria-label": `add a tag to ${runId}` });
  const add = async () => {
    const raw = input.value.trim();
    const eq = raw.indexOf("=");
    const key = (eq < 0 ? raw : raw.slice(0, eq)).trim();
    const value = eq < 0 ? "" : raw.slice(eq + 1).trim();
    if (!key) {
      say(status, "A tag is key=value (or a key alone).", true);
      return;
    }
    try {
      draw((await apiWrite("PUT", ["runs", id(runId), "tags", id(key)], { value })).tags);
      input.value = "";
      say(status, `Tag ${key} set.`);
    } catch (err) {
      say(status, explain(err, `The tag ${key} could not be set`), true);
    }
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") add();
  });
  const button = h("button", { type: "button", class: "stellar-tag-add", text: "Add tag", onclick: add });
  return h("div", { class: "stellar-tags-box" }, list, h("div", { class: "stellar-tag-form" }, input, button));
}

function notesEditor(runId, notes, status) {
  const list = h("ol", { class: "stellar-notes", "data-run-id": runId });
  for (const note of notes) list.append(noteItem(note));
  const empty = h("p", { class: "stellar-note stellar-notes-empty", text: "No notes yet." });
  if (notes.length) empty.hidden = true;
  if (!canWrite()) return h("div", { class: "stellar-notes-box" }, list, empty);
  const text = h("textarea", { class: "stellar-note-input", rows: "2", maxlength: "10000",
    placeholder: "Add a note: what you saw, what you decided…", "aria-label": `add a note to ${runId}` });
  const button = h("button", { type: "button", class: "stellar-note-add", text: "Add note" });
  button.addEventListener("click", async () => {
    if (!text.value.trim()) {
      say(status, "A note needs some text.", true);
      return;
    }
    button.disabled = true;
    try {
      // One key per note typed: a double click, or a retry after a lost answer, is still one note.
      const key = `page-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
      const body = await apiWrite("POST", ["runs", id(runId), "notes"], { text: text.value, idempotency_key: key });
      list.append(noteItem(body.note));
      empty.hidden = true;
      text.value = "";
      say(status, "Note added.");
    } catch (err) {
      say(status, explain(err, "The note could not be added"), true);
    } finally {
      button.disabled = false;
    }
  });
  return h("div", { class: "stellar-notes-box" }, list, empty, h("div", { class: "stellar-note-form" }, text, button));
}

function notificationsList(items) {
  if (!items.length) return null;
  const list = h("ul", { class: "stellar-notifications" });
  for (const n of items) {
    list.append(h("li", { class: "stellar-notification", "data-outcome": n.outcome || "", "data-severity": n.severity },
      h("time", { datetime: n.time, title: n.time, text: formatTime(n.time) }), " ", n.message));
  }
  return h("details", { class: "stellar-notifications-box" },
    h("summary", { text: `Notifications sent (${items.length})` }), list);
}

/** The annotations section of one run's card (filled as its reads come; a failed read is said in words). */
export async function annotations(run) {
  const runId = run.run_id;
  const status = h("p", { class: "stellar-note stellar-annotation-status", role: "status" });
  const box = h("section", { class: "stellar-annotations", "data-run-id": runId }, h("h3", { text: "Tags" }));
  const userTags = run.tags || {};
  box.append(tagsEditor(runId, userTags, status), h("h3", { text: "Notes" }));
  try {
    const body = await api(["runs", id(runId), "notes"], { project: run.project });
    box.append(notesEditor(runId, body.notes || [], status));
  } catch (err) {
    // TauGrid's Portal has no notes (404 route was not found): nothing to show, nothing to add.
    box.append(h("p", { class: "stellar-note", text: err.status === 404 ? "This Portal keeps no notes."
      : explain(err, "The notes could not be read") }));
  }
  try {
    const sent = await pageData(["runs", id(runId), "notifications"], { project: run.project });
    const list = notificationsList(sent.notifications || []);
    if (list) box.append(list);
  } catch {
    // A Portal without the page data (TauGrid's): no notifications to list.
  }
  box.append(status);
  return box;
}
