// Draws the sections of a wide run's metrics (shared/sections.js's buildSections) a page at a time: one element
// per section (a header button with its title and count, a body, a "Show N more" button), the same in the loss
// pane and on the Stellar run page; what a metric's node is, and where the open/closed state is kept, stay theirs.
//
// A collapsed section is only its header; an open one holds at most `page` metrics, `page` more per click.

import { h } from "./dom.js";
import { formatNumber } from "./format.js";
import { compileFilter, countText } from "./sections.js";

/** The "more" button's words with `left` metrics not shown ("" when none is left). */
export function moreText(left, page) {
  return left > 0 ? `Show ${Math.min(left, page)} more (${formatNumber(left)} not shown)` : "";
}

/** Metrics an open section shows so that its `index`-th is among them: whole pages, at least `shown`. */
export function pageCovering(index, shown, page) {
  return index < shown ? shown : (Math.floor(index / page) + 1) * page;
}

/**
 * What each section shows: [{ section, names, left }] in display order; `names` are the metrics shown (none for a
 * collapsed section), `left` how many of its matches are not. `pages` maps a section key to the metrics its
 * open section shows (a page when unset).
 */
export function layout(sections, pages, page) {
  return sections.map((section) => {
    if (!section.open) return { section, names: [], left: 0 };
    const shown = Math.min(section.metrics.length, pages.get(section.key) || page);
    return { section, names: section.metrics.slice(0, shown), left: section.metrics.length - shown };
  });
}

/**
 * The note beside the search box: "" when no filter is set, else "6 of 1,000 metrics match" (with the reason when
 * the text is matched as a substring). Returns { text, mode } (mode as compileFilter's).
 */
export function filterNote(filter, sections, total) {
  const match = compileFilter(filter);
  if (match.mode === "all") return { text: "", mode: match.mode };
  const matched = sections.reduce((n, s) => n + s.metrics.length, 0);
  const text = `${formatNumber(matched)} of ${formatNumber(total)} metrics match`
    + (match.error ? " (not a valid regex: matched as text)" : "");
  return { text, mode: match.mode };
}

export class PagedSections {
  /**
   * Sections drawn into `box`. `prefix` names the classes (`${prefix}-section`, `-section-head`, `-section-caret`,
   * `-section-title`, `-section-count`, `-more`), `bodyClass` the body's; `page` is the metrics per page;
   * `item(name, body)` returns the node of a shown metric; `toggle(key, open)` is called when a header is clicked
   * (the caller keeps the state and renders again); `rerender()` after a "more" click.
   */
  constructor(box, { prefix, bodyClass, page, item, toggle, rerender }) {
    for (const [name, value] of Object.entries({ prefix, bodyClass, page, item, toggle, rerender })) {
      if (value === undefined || value === null) throw new TypeError(`PagedSections: option "${name}" is required`);
    }
    this.box = box;
    this.options = { prefix, bodyClass, page, item, toggle, rerender };
    this.pages = new Map(); // section key → metrics its open section shows
    this.els = new Map(); // section key → { el, head, title, count, body, more }
  }

  /** Lays `sections` out in display order, drops the elements of sections no longer there; returns the names
   *  shown, in display order. */
  render(sections) {
    const { page, item } = this.options;
    const keys = new Set();
    const shown = [];
    for (const { section, names, left } of layout(sections, this.pages, page)) {
      keys.add(section.key);
      const s = this.sectionEl(section.key);
      s.el.dataset.open = String(section.open);
      s.el.dataset.count = String(section.metrics.length);
      s.title.textContent = section.title;
      s.count.textContent = countText(section);
      s.head.setAttribute("aria-expanded", String(section.open));
      this.box.append(s.el); // in display order
      const nodes = names.map((name) => item(name, s.body));
      shown.push(...names);
      s.more.hidden = left <= 0;
      s.more.textContent = moreText(left, page);
      s.body.replaceChildren(...nodes);
      s.body.hidden = !section.open;
    }
    for (const [key, s] of this.els) {
      if (keys.has(key)) continue;
      s.el.remove();
      this.els.delete(key);
    }
    return shown;
  }

  /** Whether the section `key` is drawn open. */
  isOpen(key) {
    return this.els.get(key)?.el.dataset.open === "true";
  }

  /** Pages the section `key` far enough that its `index`-th metric is shown (at the next render). */
  reveal(key, index) {
    const { page } = this.options;
    this.pages.set(key, pageCovering(index, this.pages.get(key) || page, page));
  }

  sectionEl(key) {
    let s = this.els.get(key);
    if (s) return s;
    const { prefix, bodyClass, page, toggle, rerender } = this.options;
    const title = h("span", { class: `${prefix}-section-title` });
    const count = h("span", { class: `${prefix}-section-count` });
    const head = h("button", { type: "button", class: `${prefix}-section-head`,
      onclick: () => toggle(key, !this.isOpen(key)) }, h("span", { class: `${prefix}-section-caret` }), title, count);
    const body = h("div", { class: bodyClass });
    const more = h("button", { type: "button", class: `${prefix}-more`, hidden: true, onclick: () => {
      this.pages.set(key, (this.pages.get(key) || page) + page);
      rerender();
    } });
    const el = h("section", { class: `${prefix}-section`, "data-section": key }, head, body, more);
    s = { el, head, title, count, body, more };
    this.els.set(key, s);
    return s;
  }
}
