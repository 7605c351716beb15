// URLs of the Portal's routes: every id is one path segment, percent-encoded on its own, so a run id with
// "/", "?", "#", "%" or spaces reaches the Portal as that id.

/** Encodes one path segment. "." and ".." cannot be sent as segments (URLs resolve them away): an error says so. */
export function pathSegment(value) {
  const text = String(value);
  if (text === "" || text === "." || text === "..") {
    throw new RangeError(`${JSON.stringify(text)} cannot be used as an id in a URL path`);
  }
  return encodeURIComponent(text);
}

/**
 * `root` (the Portal's root, absolute or relative to `base`) + the path `segments` (fixed words and ids) +
 * the `query` (null, undefined and "" values left out; an array value repeats its key). Returns a URL.
 */
export function portalUrl(root, segments, query = {}, base = undefined) {
  const path = segments.map((s) => (typeof s === "object" && s !== null && "id" in s ? pathSegment(s.id) : String(s)));
  const url = new URL(path.join("/"), new URL(root, base));
  for (const [key, value] of Object.entries(query)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (v !== undefined && v !== null && v !== "") url.searchParams.append(key, String(v));
    }
  }
  return url;
}

/** An id for portalUrl's segments (fixed words go as they are, ids are encoded). */
export function id(value) {
  return { id: value };
}

/**
 * The Stellar page drawing `targets` (the first, then the others compared with it), as TauGrid links it;
 * a `source` (local | kusto | auto) other than the Portal's default is carried to the page.
 */
export function stellarUrl(root, targets, project = null, base = undefined, source = null) {
  return portalUrl(root, ["stellar"], { target: targets, project, source }, base);
}
