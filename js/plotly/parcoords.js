// plotly.js's parallel coordinates (parcoords), registered into the same plotly as plotly/index.js. Imported
// only by the Stellar page's parallel-coordinates view, which is loaded lazily: neither the pane's bundle nor
// the pages' first script carries it.
import parcoords from "plotly.js/lib/parcoords";
import Plotly from "./index.js";

Plotly.register([parcoords]);

export default Plotly;
