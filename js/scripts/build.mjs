// Bundles every browser page of taunotebook into the Python package (`npm run build`, which
// hatch-jupyter-builder runs on `pip install`):
//   pane/index.js       -> taunotebook/static/pane.js              the loss pane's anywidget ESM, one file
//                                                                  (anywidget sends it inline to each widget)
//   stellar/main.js     -> taunotebook/static/stellar/stellar.js   the Stellar pages (ESM; chunks loaded
//   stellar/stellar.css -> taunotebook/static/stellar/stellar.css  lazily land beside it as chunk-*.js)
//   stellar/main.js     -> taunotebook/static/stellar/stellar-offline.js   the same pages in one classic script,
//                                                                  inlined into a view's static HTML export
//   shared/export_html.js's EXPORT_TEMPLATE -> taunotebook/static/stellar/export_template.html   that export's
//                                                                  page, which `taunotebook export-view` fills too
// Both draw with plotly/index.js: plotly.js with only the traces we draw.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import * as esbuild from "esbuild";
import { EXPORT_TEMPLATE } from "../shared/export_html.js";

const js = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const staticDir = resolve(js, "..", "taunotebook", "static");

// plotly.js's source modules built the way its own esbuild-config.js builds them: one regl, and no maplibre
// CSS (we draw no maps).
const plotlySource = {
  name: "plotly-source",
  setup(build) {
    build.onResolve({ filter: /^maplibre-gl\/dist\/maplibre-gl\.css$/ }, () => ({ path: "maplibre-css", namespace: "empty" }));
    build.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: "", loader: "js" }));
  },
};

const common = {
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  legalComments: "none",
  define: { global: "window", "define.amd": "false" },
  alias: { regl: "@plotly/regl", buffer: resolve(js, "plotly", "buffer-shim.js") },
  plugins: [plotlySource],
  logLevel: "warning",
  metafile: true,
};

function report(result) {
  for (const file of Object.keys(result.metafile.outputs)) {
    const bytes = readFileSync(file);
    const size = (n) => (n >= 1e5 ? `${(n / 1e6).toFixed(2)} MB` : `${(n / 1e3).toFixed(1)} kB`);
    console.log(`build: ${relative(process.cwd(), file)} ${size(bytes.length)} (${size(gzipSync(bytes).length)} gzipped)`);
  }
}

// A clean slate, so no file of an older layout (such as the full plotly.min.js) stays behind to be served.
rmSync(staticDir, { recursive: true, force: true });
mkdirSync(resolve(staticDir, "stellar"), { recursive: true });

report(await esbuild.build({
  ...common,
  entryPoints: [resolve(js, "pane", "index.js")],
  outfile: resolve(staticDir, "pane.js"),
}));

report(await esbuild.build({
  ...common,
  entryPoints: [
    { in: resolve(js, "stellar", "main.js"), out: "stellar" },
    { in: resolve(js, "stellar", "stellar.css"), out: "stellar" },
  ],
  outdir: resolve(staticDir, "stellar"),
  splitting: true,
  chunkNames: "chunk-[hash]",
}));

// The pages again as one classic script (no chunks, no module): what a static export inlines.
report(await esbuild.build({
  ...common,
  format: "iife",
  entryPoints: [resolve(js, "stellar", "main.js")],
  outfile: resolve(staticDir, "stellar", "stellar-offline.js"),
}));

// The static export's page, for the Python side of the export (taunotebook/export_view.py) to fill as exportHtml does.
writeFileSync(resolve(staticDir, "stellar", "export_template.html"), EXPORT_TEMPLATE);
console.log("build: taunotebook/static/stellar/export_template.html");
