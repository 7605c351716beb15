// A document of just what shared/dom.js's h() and the section layout touch (elements, attributes, dataset,
// children, click listeners), so that browser-side layout code runs under Node's test runner without a browser.

const camel = (name) => name.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

class FakeElement {
  constructor(tag) {
    this.tagName = tag.toUpperCase();
    this.className = "";
    this.type = "";
    this.hidden = false;
    this.dataset = {};
    this.attributes = new Map();
    this.children = [];
    this.parent = null;
    this.listeners = new Map();
    this.text = "";
  }

  get textContent() {
    return this.text + this.children.map((c) => (typeof c === "string" ? c : c.textContent)).join("");
  }

  set textContent(value) {
    this.replaceChildren();
    this.text = String(value);
  }

  setAttribute(name, value) {
    this.attributes.set(name, String(value));
    if (name.startsWith("data-")) this.dataset[camel(name.slice(5))] = String(value);
  }

  getAttribute(name) {
    return this.attributes.has(name) ? this.attributes.get(name) : null;
  }

  addEventListener(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, []);
    this.listeners.get(type).push(fn);
  }

  click() {
    for (const fn of this.listeners.get("click") || []) fn({ target: this });
  }

  append(...nodes) {
    for (const node of nodes) {
      if (typeof node !== "string") {
        node.remove();
        node.parent = this;
      }
      this.children.push(node);
    }
  }

  replaceChildren(...nodes) {
    for (const child of this.children) if (typeof child !== "string") child.parent = null;
    this.children = [];
    this.append(...nodes);
  }

  remove() {
    if (!this.parent) return;
    this.parent.children = this.parent.children.filter((c) => c !== this);
    this.parent = null;
  }

  /** The first descendant with the class `name` (a class selector is all the tests ask for). */
  find(name) {
    for (const child of this.children) {
      if (typeof child === "string") continue;
      if (child.className.split(" ").includes(name)) return child;
      const found = child.find(name);
      if (found) return found;
    }
    return null;
  }
}

/** Installs the fake as globalThis.document (once) and returns it. */
export function installFakeDocument() {
  globalThis.document ??= { createElement: (tag) => new FakeElement(tag) };
  return globalThis.document;
}
