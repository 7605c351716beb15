// Copies plotly.js from node_modules into the Python package, where the Portal serves it to the Stellar pages.
import { copyFileSync, mkdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
// Resolve through the package itself so a hoisted or nested install both work.
const source = require.resolve("plotly.js-dist-min/plotly.min.js");
const targetDir = resolve(here, "..", "..", "taunotebook", "static", "stellar");
const target = join(targetDir, "plotly.min.js");

mkdirSync(targetDir, { recursive: true });
copyFileSync(source, target);
const version = require("plotly.js-dist-min/package.json").version;
console.log(`build:stellar: plotly.js ${version} -> ${relative(process.cwd(), target)} (${statSync(target).size} bytes)`);
