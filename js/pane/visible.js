// The pane's `visible` trait: the union of the metrics every view of a model has a plot for (a notebook may show
// the same pane twice). The kernel fetches and polls only these (contract in taunotebook/pane.py).

const viewsShowing = new WeakMap();

/** A view now shows `names` (null: the view is gone). Sets the model's `visible` to the union of all views' names,
 *  in first-seen order, when it changed; returns the names no view shows any more. */
export function reportVisible(model, view, names) {
  let views = viewsShowing.get(model);
  if (!views) viewsShowing.set(model, (views = new Map()));
  if (names === null) views.delete(view); else views.set(view, names);
  const union = [];
  const seen = new Set();
  for (const list of views.values()) for (const n of list) if (!seen.has(n)) { seen.add(n); union.push(n); }
  const before = model.get("visible") || [];
  if (before.length === union.length && before.every((n, i) => n === union[i])) return [];
  model.set("visible", union);
  model.save_changes();
  return before.filter((n) => !seen.has(n)); // names no view shows any more
}

