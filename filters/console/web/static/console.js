// The console's own script, loaded from the gateway like everything else
// (no inline script: the Content-Security-Policy forbids it). It draws the
// charts from the JSON each canvas carries, asks before a form whose
// data-confirm says so, and copies a new key's secret on request.
(function () {
  'use strict';

  var palette = ['#2563eb', '#f59e0b', '#10b981', '#ef4444', '#8b5cf6', '#06b6d4', '#ec4899', '#84cc16', '#64748b'];

  function draw(root) {
    // Charts whose canvas a refresh replaced are let go first.
    Object.values(Chart.instances).forEach(function (c) {
      if (!document.body.contains(c.canvas)) c.destroy();
    });
    root.querySelectorAll('canvas[data-chart]').forEach(function (canvas) {
      var d = JSON.parse(canvas.dataset.chart);
      var old = Chart.getChart(canvas);
      if (old) old.destroy();
      new Chart(canvas, {
        type: 'bar',
        data: {
          labels: d.labels,
          datasets: (d.series || []).map(function (s, i) {
            return { label: s.name, data: s.values, backgroundColor: palette[i % palette.length] };
          })
        },
        options: {
          animation: false,
          responsive: true,
          maintainAspectRatio: false,
          scales: {
            x: { stacked: true },
            y: { stacked: true, beginAtZero: true, title: { display: true, text: d.unit } }
          },
          plugins: { legend: { position: 'bottom' } }
        }
      });
    });
  }
  htmx.onLoad(draw);

  document.addEventListener('submit', function (e) {
    var msg = e.target.getAttribute('data-confirm');
    if (msg && !window.confirm(msg)) e.preventDefault();
  });

  document.addEventListener('click', function (e) {
    var id = e.target.getAttribute && e.target.getAttribute('data-copy');
    if (!id || !navigator.clipboard) return;
    navigator.clipboard.writeText(document.getElementById(id).textContent).then(function () {
      e.target.textContent = 'Copied';
    });
  });
})();
