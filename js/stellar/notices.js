// Errors shown on a page, in words, at its top (or in the part of the page they concern).
import { StellarError } from "./api.js";
import { main, state } from "./page.js";

export function errorBox() {
  let box = document.getElementById("stellar-errors");
  if (!box) {
    box = document.createElement("div");
    box.id = "stellar-errors";
    main.prepend(box);
  }
  return box;
}

export function showError(text, err = null, container = errorBox()) {
  const p = document.createElement("p");
  p.className = "stellar-error";
  p.setAttribute("role", "alert");
  p.textContent = text;
  if (err instanceof StellarError) {
    p.dataset.status = String(err.status);
    p.dataset.code = err.code;
  }
  container.append(p);
  state.errors.push({ text, status: err?.status ?? null, code: err?.code ?? null });
  return p;
}
