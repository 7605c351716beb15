// plotly.js's parallel coordinates (parcoords), registered into the same plotly as plotly/index.js. Imported
// only by the Stellar page's parallel-coordinates view, which is loaded lazily: neither the pane's bundle nor
// the pages' first script carries it.
// The "strict" build carries regl's shaders precompiled: the Stellar pages' Content-Security-Policy has no
// 'unsafe-eval', and regl otherwise compiles its draw calls with Function().
import parcoords from "plotly.js/src/traces/parcoords/strict";
import Plotly from "./index.js";

Plotly.register([parcoords]);

export default Plotly;
