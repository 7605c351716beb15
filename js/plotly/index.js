// plotly.js with only the traces the pane and the Stellar pages draw: scatter (SVG) and scattergl (WebGL, for
// series too long for SVG). Parallel coordinates (parcoords) register in plotly/parcoords.js, a lazily loaded
// chunk of the Stellar pages only.
import Plotly from "plotly.js/lib/core";
import scatter from "plotly.js/lib/scatter";
import scattergl from "plotly.js/lib/scattergl";

Plotly.register([scatter, scattergl]);

export default Plotly;
