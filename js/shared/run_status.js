// A run's status line in words: what the kernel says, and why a run ended when its end was not a success.

/**
 * The pane's status words. ``status.message`` is the kernel's (connected, warnings, a failure's message);
 * a cancelled run adds the message its outcome was recorded with (``tau.status.message``: a stop rule
 * says which rule fired on which value at which step), unless the words already hold it.
 */
export function statusWords(state, status, run) {
  let words = (status && status.message) || "";
  if (state === "failed" && !/failed/.test(words)) words = `the run failed. ${words}`;
  const why = (run && run.status_message) || "";
  if (state === "cancelled" && why && !words.includes(why)) words = `the run was cancelled: ${why}. ${words}`;
  return words.trim();
}
