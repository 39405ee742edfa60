// Draws every chart of the page from its figure, kept as inert JSON in a
// <script type="application/json"> element (the page's CSP runs only files of the report).
document.querySelectorAll("div.chart[data-figure]").forEach(function (el) {
  var fig = JSON.parse(document.getElementById(el.dataset.figure + "-data").textContent);
  Plotly.newPlot(el, fig.data, fig.layout, {responsive: true, displaylogo: false});
});
