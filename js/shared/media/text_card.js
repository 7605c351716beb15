// A text tag's card (docs/media.md, "The cards"): the strings the tag holds at the step nearest the cursor, for each
// run side by side, drawn by their shape: one string as a paragraph, a list as rows, a 2-D tensor as a table (a
// higher one as a table of its last axis, each row named by its leading indices). Strings are text, never markup.
import { h } from "../dom.js";
import { steppedCard } from "./card.js";

/**
 * How a text answer is laid out: { kind: "single" | "list" | "table", rows: [[cell…]], rowNames: [..] | null }.
 * `shape` is the tensor's (row-major `text`); a shape whose size does not match the strings is drawn as a list.
 */
export function textLayout(shape, text) {
  const strings = (text || []).map((s) => String(s));
  const dims = (shape || []).map(Number);
  const size = dims.reduce((a, b) => a * b, 1);
  if (dims.length === 0 && strings.length === 1) return { kind: "single", rows: [[strings[0]]], rowNames: null };
  if (dims.length <= 1 || size !== strings.length || dims.includes(0)) {
    return { kind: strings.length === 1 ? "single" : "list", rows: strings.map((s) => [s]), rowNames: null };
  }
  const width = dims[dims.length - 1];
  const rows = [];
  for (let i = 0; i < strings.length; i += width) rows.push(strings.slice(i, i + width));
  if (dims.length === 2) return { kind: "table", rows, rowNames: null };
  // [a, b, c]: row r is the leading index (r / b, r % b), written "[i, j]".
  const lead = dims.slice(0, -1);
  const rowNames = rows.map((_, r) => {
    const idx = [];
    let rest = r;
    for (let d = lead.length - 1; d >= 0; d--) {
      idx.unshift(rest % lead[d]);
      rest = Math.floor(rest / lead[d]);
    }
    return `[${idx.join(", ")}]`;
  });
  return { kind: "table", rows, rowNames };
}

/** The DOM of a text answer's strings, as textLayout lays them out (every string set as text). */
export function textNode(shape, text) {
  const { kind, rows, rowNames } = textLayout(shape, text);
  if (kind === "single") return h("pre", { class: "media-text", text: rows[0]?.[0] ?? "" });
  if (kind === "list") {
    return h("ol", { class: "media-text-list", start: "0" }, ...rows.map(([s]) => h("li", {}, h("pre", { class: "media-text", text: s }))));
  }
  const body = h("tbody", {}, ...rows.map((cells, r) => h("tr", {},
    rowNames ? h("th", { scope: "row", text: rowNames[r] }) : null,
    ...cells.map((cell) => h("td", {}, h("pre", { class: "media-text", text: cell }))))));
  return h("table", { class: "media-text-table", "data-shape": (shape || []).join("x") }, body);
}

/**
 * A card for text tag `tag` of `runs` ([{ key, label, color, missing }]): `fetchText(runKey, step)` reads
 * `…/text?tag=&step=`; `range` and `onStep` as the image card's. `show(step)` draws each run's strings at the
 * step nearest `step`.
 */
export function createTextCard({ tag, runs, range, fetchText, onStep = () => {} }) {
  return steppedCard({ kind: "text", tag, runs, range, fetch: fetchText, onStep, draw(panel, answer) {
    panel.body.replaceChildren(textNode(answer.shape, answer.text));
  } });
}
