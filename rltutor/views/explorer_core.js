// --- rlx core begin ---
var RLX_COLORS = {reinforce: "#7f7f7f", grpo: "#d62728", dr_grpo: "#ff7f0e", rloo: "#9467bd",
                  gae: "#1f77b4", gae_critic: "#2ca02c"};
function rlxCurve(data, st, est) {
  var d = data.values[st.task][st.noise][st.metric];
  if (est === "reinforce") return d.reinforce[st.gamma];
  if (est === "grpo" || est === "dr_grpo" || est === "rloo") return d[est][st.G];
  if (est === "gae") return d.gae[st.gamma][st.lam];
  if (est === "gae_critic") return d.gae_critic[st.gamma][st.lam][st.crit];
  throw new Error("unknown estimator " + est);
}
// The SNR's Monte-Carlo standard error at each T (stored beside the SNR), or null when the data have none.
function rlxSe(data, st, est) {
  if (st.metric !== "snr" || !data.values[st.task][st.noise].snr_se) return null;
  return rlxCurve(data, Object.assign({}, st, {metric: "snr_se"}), est);
}
function rlxFmt(v) {
  if (v === 0) return "0";
  var a = Math.abs(v);
  if (a >= 1e4 || a < 1e-3) return v.toExponential(1);
  return (+v.toPrecision(3)).toString();
}
function rlxSvg(data, st, W, H) {
  var Ts = data.grid.T, logY = st.metric !== "cosine";
  var m = {l: 62, r: 16, t: 16, b: 46}, pw = W - m.l - m.r, ph = H - m.t - m.b;
  var ests = Object.keys(data.labels).filter(function (e) { return st.show[e]; });
  var curves = ests.map(function (e) { return rlxCurve(data, st, e); });
  var lo = Infinity, hi = -Infinity;
  function ok(v) { return isFinite(v) && (!logY || v > 0); }  // on a log axis 0 means "not measurable"
  curves.forEach(function (c) { c.forEach(function (v) {
    if (!ok(v)) return;
    var y = logY ? Math.log10(v) : v; if (y < lo) lo = y; if (y > hi) hi = y; }); });
  if (!isFinite(lo)) { lo = 0; hi = 1; }
  if (logY) { lo = Math.floor(lo); hi = Math.ceil(hi); if (hi === lo) hi = lo + 1; }
  else { lo = Math.min(0, lo); hi = 1; }
  var x0 = Math.log2(Ts[0]), x1 = Math.log2(Ts[Ts.length - 1]);
  function X(T) { return m.l + (x1 === x0 ? 0.5 : (Math.log2(T) - x0) / (x1 - x0)) * pw; }
  function Y(v) { var y = logY ? Math.log10(v) : v; return m.t + (1 - (y - lo) / (hi - lo)) * ph; }
  var s = ['<svg xmlns="http://www.w3.org/2000/svg" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + ' ' + H +
           '" font-family="sans-serif" font-size="11">'];
  s.push('<rect x="' + m.l + '" y="' + m.t + '" width="' + pw + '" height="' + ph + '" fill="none" stroke="#999"/>');
  Ts.forEach(function (T) {
    s.push('<line x1="' + X(T) + '" x2="' + X(T) + '" y1="' + (m.t + ph) + '" y2="' + (m.t + ph + 4) +
           '" stroke="#333"/>');
    s.push('<text x="' + X(T) + '" y="' + (m.t + ph + 16) + '" text-anchor="middle">' + T + '</text>');
  });
  var ticks = [];
  if (logY) { for (var e = lo; e <= hi; e++) ticks.push(e); }
  else { for (var k = 0; k <= 5; k++) ticks.push(lo + (hi - lo) * k / 5); }
  ticks.forEach(function (tk) {
    var y = m.t + (1 - (tk - lo) / (hi - lo)) * ph;
    s.push('<line x1="' + m.l + '" x2="' + (m.l + pw) + '" y1="' + y + '" y2="' + y + '" stroke="#eee"/>');
    s.push('<text x="' + (m.l - 6) + '" y="' + (y + 4) + '" text-anchor="end">' +
           (logY ? rlxFmt(Math.pow(10, tk)) : tk.toFixed(1)) + '</text>');
  });
  var names = {snr: "SNR = |E g|\u00b2 / E|g \u2212 E g|\u00b2", cosine: "E cos(g, true gradient)",
               variance: "variance E|g \u2212 E g|\u00b2"};
  s.push('<text x="' + (m.l + pw / 2) + '" y="' + (H - 8) +
         '" text-anchor="middle">horizon T (decisions per trajectory)</text>');
  s.push('<text transform="translate(14,' + (m.t + ph / 2) + ') rotate(-90)" text-anchor="middle">' +
         names[st.metric] + '</text>');
  var xs = X(Ts[st.T]);
  s.push('<line class="rlx-marker" x1="' + xs + '" x2="' + xs + '" y1="' + m.t + '" y2="' + (m.t + ph) +
         '" stroke="#444" stroke-dasharray="4,3"/>');
  ests.forEach(function (e, i) {  // the 95% band SNR +- 1.96 SE, one polygon per run of drawable points
    var c = curves[i], se = rlxSe(data, st, e);
    if (!se) return;
    var run = [];
    function flush() {
      if (run.length > 1) {
        var up = run.map(function (j) { return X(Ts[j]).toFixed(1) + ',' + Y(c[j] + 1.96 * se[j]).toFixed(1); });
        var dn = run.slice().reverse().map(function (j) {
          var lo = c[j] - 1.96 * se[j];
          if (logY && !(lo > 0)) lo = c[j] / 100;  // a log axis has no 0: clip the band two decades down
          return X(Ts[j]).toFixed(1) + ',' + Y(lo).toFixed(1);
        });
        s.push('<path class="rlx-band" data-est="' + e + '" fill="' + RLX_COLORS[e] +
               '" fill-opacity="0.18" stroke="none" d="M' + up.concat(dn).join(' L') + ' Z"/>');
      }
      run = [];
    }
    c.forEach(function (v, j) { if (ok(v) && isFinite(se[j])) run.push(j); else flush(); });
    flush();
  });
  ests.forEach(function (e, i) {
    var c = curves[i], d = [], pen = 'M';
    c.forEach(function (v, j) {
      if (!ok(v)) { pen = 'M'; return; }  // a gap where the value cannot be drawn
      d.push(pen + X(Ts[j]).toFixed(1) + ',' + Y(v).toFixed(1)); pen = 'L';
    });
    s.push('<path class="rlx-line" data-est="' + e + '" fill="none" stroke-width="2" stroke="' + RLX_COLORS[e] +
           '" d="' + (d.length ? d.join(' ') : 'M0,0') + '"/>');
    if (ok(c[st.T])) {
      s.push('<circle cx="' + xs + '" cy="' + Y(c[st.T]).toFixed(1) + '" r="4" fill="' + RLX_COLORS[e] + '"/>');
    }
  });
  s.push('</svg>');
  return s.join('');
}
function rlxReadout(data, st) {
  var T = data.grid.T[st.T], rows = [];
  Object.keys(data.labels).forEach(function (e) {
    if (!st.show[e]) return;
    var v = rlxCurve(data, st, e)[st.T], se = rlxSe(data, st, e);
    rows.push('<tr><td><span style="color:' + RLX_COLORS[e] + '">\u25a0</span> ' + data.labels[e] +
              '</td><td style="text-align:right">' + rlxFmt(v) + (se ? ' \u00b1 ' + rlxFmt(1.96 * se[st.T]) : '') +
              '</td></tr>');
  });
  var head = st.metric + (rlxSe(data, st, Object.keys(data.labels)[0]) ? ' (\u00b1 95% Monte-Carlo)' : '');
  return '<table style="font-size:12px"><tr><th>at T = ' + T + '</th><th>' + head + '</th></tr>' +
         rows.join('') + '</table>';
}
// --- rlx core end ---
