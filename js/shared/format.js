// Numbers and times in words, the same in the pane and on the Stellar pages.

const NUMBER = new Intl.NumberFormat("en-US");

/** A value for people: integers grouped (12,000), others to 6 significant digits, tiny or huge ones as 1.2345e-7. */
export function formatNumber(value) {
  if (value === undefined || value === null || value === "") return "–";
  const n = Number(value);
  if (Number.isNaN(n)) return typeof value === "number" ? "NaN" : String(value);
  if (n === Infinity) return "+Inf";
  if (n === -Infinity) return "-Inf";
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return NUMBER.format(n);
  const abs = Math.abs(n);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) return n.toExponential(4);
  return String(Number(n.toPrecision(6)));
}

/** "1 point", "12,000 points". */
export function plural(n, word) {
  return `${NUMBER.format(n)} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * Milliseconds since the epoch from what a Portal sends: an RFC 3339 string, or a number in µs (TauGrid's
 * wall times), ms or s (told apart by size). null when there is none or it is not a time.
 */
export function epochMs(raw) {
  if (raw === undefined || raw === null || raw === "") return null;
  if (typeof raw === "string") {
    const parsed = Date.parse(raw);
    return Number.isNaN(parsed) ? null : parsed;
  }
  if (typeof raw !== "number" || !Number.isFinite(raw)) return null;
  if (Math.abs(raw) > 1e14) return raw / 1000;
  if (Math.abs(raw) > 1e11) return raw;
  return raw * 1000;
}

/** An instant as "2025-10-09 08:53:20 UTC" (the input as given when it is not a time). */
export function formatTime(raw) {
  const ms = epochMs(raw);
  if (ms === null) return raw === undefined || raw === null ? "–" : String(raw);
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}
