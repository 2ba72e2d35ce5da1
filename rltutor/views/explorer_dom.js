(function () {
  var root = document.getElementById("__ID__");
  var data = JSON.parse(root.querySelector("script.rlx-data").textContent);
  var st = {task: data.grid.tasks[0], noise: 0, metric: "snr", T: __T0__, G: __G0__, gamma: __GA0__,
            lam: __L0__, crit: __C0__, show: {}};
  Object.keys(data.labels).forEach(function (e) { st.show[e] = __SHOW__.indexOf(e) >= 0; });
  function draw() {
    root.querySelector(".rlx-plot").innerHTML = rlxSvg(data, st, __W__, __H__);
    root.querySelector(".rlx-readout").innerHTML = rlxReadout(data, st);
    root.querySelectorAll("input[type=range]").forEach(function (el) {
      var vals = data.grid[el.dataset.grid];
      el.parentNode.querySelector("output").textContent = vals[+el.value];
    });
  }
  root.querySelectorAll("input[type=range]").forEach(function (el) {
    el.addEventListener("input", function () { st[el.dataset.key] = +el.value; draw(); });
  });
  root.querySelectorAll("select").forEach(function (el) {
    el.addEventListener("change", function () { st[el.dataset.key] = el.value; draw(); });
  });
  root.querySelectorAll("input[type=checkbox]").forEach(function (el) {
    el.addEventListener("change", function () { st.show[el.value] = el.checked; draw(); });
  });
  draw();
})();
