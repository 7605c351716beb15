// The download box's suggestions: the first few metric names holding what is typed. A datalist filters its options
// by the box's text as a substring, so the rule here is a substring too (no regex: the list would show nothing).

/** How many suggestions the metric box offers at a time: a run of 10,000 metrics must not make 10,000 options. */
export const MAX_SUGGESTIONS = 50;

/** The first `max` names holding `text` (case-insensitive), in the given order. */
export function suggestMetrics(names, text, max = MAX_SUGGESTIONS) {
  const needle = text.trim().toLowerCase();
  const found = [];
  for (const name of names) {
    if (found.length >= max) break;
    if (!needle || name.toLowerCase().includes(needle)) found.push(name);
  }
  return found;
}
