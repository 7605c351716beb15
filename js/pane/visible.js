// The pane's `visible` trait: the union of the metrics every view of a model has a plot for (a notebook may show
// the same pane twice). The kernel fetches and polls only these (contract in taunotebook/pane.py). The media cards
// on screen (`media_visible`) are reported the same way.

const viewsShowing = new WeakMap();

/** A view now shows `names` (null: the view is gone). Sets the model's `trait` (`visible`) to the union of all
 *  views' names, in first-seen order, when it changed; returns the names no view shows any more. */
export function reportVisible(model, view, names, trait = "visible") {
  let traits = viewsShowing.get(model);
  if (!traits) viewsShowing.set(model, (traits = new Map()));
  let views = traits.get(trait);
  if (!views) traits.set(trait, (views = new Map()));
  if (names === null) views.delete(view); else views.set(view, names);
  const union = [];
  const seen = new Set();
  for (const list of views.values()) for (const n of list) if (!seen.has(n)) { seen.add(n); union.push(n); }
  const before = model.get(trait) || [];
  if (before.length === union.length && before.every((n, i) => n === union[i])) return [];
  model.set(trait, union);
  model.save_changes();
  return before.filter((n) => !seen.has(n)); // names no view shows any more
}

