// A run as a compare page's address names it: `run` (in the page's ?project=, or the only run of that id) or
// `project/run`, so that one page compares runs of several projects. A run id never holds "/" (the Portal
// refuses one in a path), so the last "/" separates the project from the run.

/** `{ runId, project }` of an address's run; `project` is `defaultProject` when the run names none. */
export function parseRunRef(key, defaultProject = null) {
  const text = String(key);
  const cut = text.lastIndexOf("/");
  if (cut > 0 && cut < text.length - 1) return { runId: text.slice(cut + 1), project: text.slice(0, cut) };
  return { runId: cut === text.length - 1 ? text.slice(0, cut) : text, project: defaultProject };
}

/** The address's name of a run of `project` (just its id when that is the page's project or none). */
export function runRefKey(runId, project, pageProject = null) {
  return project && project !== pageProject ? `${project}/${runId}` : runId;
}

/** Whether the runs named by `keys` lie in more than one project (`project` of each known run). */
export function manyProjects(projects) {
  return new Set(projects.filter(Boolean)).size > 1;
}
