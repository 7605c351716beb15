// Runs the JavaScript unit tests (js/test/*.test.js) with Node's own test runner, printing its spec report.
// Fails when a test fails, and when no test ran at all: a suite that runs nothing proves nothing.
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { run } from "node:test";
import { spec } from "node:test/reporters";
import { fileURLToPath } from "node:url";

const dir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "test");
const files = readdirSync(dir).filter((f) => f.endsWith(".test.js")).sort().map((f) => join(dir, f));
if (!files.length) {
  console.error(`no JavaScript test files (*.test.js) in ${dir}`);
  process.exit(1);
}

// A file is reported as a test of its own when it holds none (and when it fails to load): only a load
// failure counts, as a failure.
const isTest = (event) => event.details?.type !== "suite" && event.name !== event.file;
const counts = { pass: 0, fail: 0 };
const stream = run({ files, concurrency: 1 });
stream.on("test:pass", (event) => {
  if (isTest(event)) counts.pass += 1;
});
stream.on("test:fail", (event) => {
  counts.fail += 1;
});
const report = stream.compose(spec);
report.pipe(process.stdout);
report.on("end", () => {
  console.log(`js: ${counts.pass} passed, ${counts.fail} failed`);
  if (counts.fail || !counts.pass) {
    if (!counts.pass) console.error("no JavaScript test ran");
    process.exitCode = 1;
  }
});
