// Builds DOM elements: h("a", { class: "x", href, onclick: fn, "data-run": id }, child, "text").

/** class → className, text → textContent, on<event> functions → listeners, data-/aria-/style/role/for as attributes,
 *  other keys as properties where the element has them. null and undefined children are skipped. */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (/^(data-|aria-)/.test(key) || key === "style" || key === "role" || key === "for" || !(key in node)) {
      node.setAttribute(key, value);
    } else node[key] = value;
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}
