// What a job asked for and where it is, in words: the pane's header and the run page's card say the same.

const NAMED = [
  ["gpus", (v) => `${v} GPU${v === 1 ? "" : "s"}`],
  ["gpus_per_worker", (v) => `${v} GPU${v === 1 ? "" : "s"} per worker`],
  ["workers", (v) => `${v} worker${v === 1 ? "" : "s"}`],
  ["nodes", (v) => `${v} node${v === 1 ? "" : "s"}`],
  ["processes_per_node", (v) => `${v} process${v === 1 ? "" : "es"} per node`],
  ["cpu", (v) => `cpu ${v}`],
  ["memory", (v) => `memory ${v}`],
  ["image", (v) => `image ${v}`],
  ["queue", (v) => `queue ${v}`],
  ["profile", (v) => `profile ${v}`],
  ["retries", (v) => `${v} retr${v === 1 ? "y" : "ies"}`],
  ["time_limit", (v) => `time limit ${v}${typeof v === "number" ? "s" : ""}`],
  ["engine", (v) => `engine ${v}`],
];

/** "2 GPUs · image repo/train:1 · queue gpu-a": the resources a job asked for, "" for none. */
export function resourcesText(resources) {
  if (!resources || typeof resources !== "object") return "";
  const parts = [];
  for (const [key, say] of NAMED) {
    const value = resources[key];
    if (value !== undefined && value !== null && value !== "") parts.push(say(value));
  }
  return parts.join(" · ");
}

/** "failed: killed by SIGKILL (exit 137)": a lifecycle's words ("" when there is none). */
export function lifecycleText(lifecycle) {
  if (!lifecycle || typeof lifecycle !== "object" || !lifecycle.phase) return "";
  if (lifecycle.text) return lifecycle.text;
  const phase = lifecycle.retries ? `${lifecycle.phase} (retried ${lifecycle.retries})` : lifecycle.phase;
  return lifecycle.reason ? `${phase}: ${lifecycle.reason}` : phase;
}
