// plotly.js with only the traces the pane and the Stellar pages draw: scatter (SVG) and scattergl (WebGL, for
// series too long for SVG). A new trace is one more import and register line here (issue 15 adds parcoords).
import Plotly from "plotly.js/lib/core";
import scatter from "plotly.js/lib/scatter";
import scattergl from "plotly.js/lib/scattergl";

Plotly.register([scatter, scattergl]);

export default Plotly;
