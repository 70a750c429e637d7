(function () {
  'use strict';
  var KEY = 'web-profiler/theme';
  var root = document.documentElement;
  function apply(theme) {
    if (theme === 'light' || theme === 'dark') root.setAttribute('data-theme', theme);
    else root.removeAttribute('data-theme');
    var button = document.getElementById('theme-switch');
    if (button) button.textContent = 'Theme: ' + (theme || 'auto');
  }
  var saved = null;
  try { saved = localStorage.getItem(KEY); } catch (e) { /* storage blocked: follow the system */ }
  apply(saved);
  document.addEventListener('DOMContentLoaded', function () {
    apply(saved);
    var button = document.getElementById('theme-switch');
    if (button) button.addEventListener('click', function () {
      var order = [null, 'light', 'dark'];
      saved = order[(order.indexOf(saved) + 1) % order.length];
      try { if (saved) localStorage.setItem(KEY, saved); else localStorage.removeItem(KEY); } catch (e) { /* ignore */ }
      apply(saved);
    });

    // Tabs: arrow keys move between tabs, as the ARIA pattern has it.
    document.querySelectorAll('.tabs').forEach(function (tabs) {
      var list = Array.prototype.slice.call(tabs.querySelectorAll('[role="tab"]'));
      function select(tab) {
        list.forEach(function (t) {
          var on = t === tab;
          t.setAttribute('aria-selected', on ? 'true' : 'false');
          t.tabIndex = on ? 0 : -1;
          var panel = document.getElementById(t.getAttribute('aria-controls'));
          if (panel) panel.hidden = !on;
        });
      }
      list.forEach(function (tab, i) {
        tab.addEventListener('click', function () { select(tab); });
        tab.addEventListener('keydown', function (e) {
          var next = e.key === 'ArrowRight' ? list[(i + 1) % list.length] : e.key === 'ArrowLeft' ? list[(i - 1 + list.length) % list.length] : null;
          if (next) { e.preventDefault(); select(next); next.focus(); }
        });
      });
    });

    document.addEventListener('click', function (e) {
      var target = e.target;
      if (!(target instanceof Element)) return;
      var copy = target.closest('[data-copy]');
      if (copy) {
        e.preventDefault();
        var text = copy.getAttribute('data-copy') || '';
        var done = function () { var old = copy.textContent; copy.textContent = 'Copied'; setTimeout(function () { copy.textContent = old; }, 1200); };
        if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, function () {});
      }
    });

    // Log filters, by level and by logger: a row shows when both its level and its logger are checked.
    document.querySelectorAll('[data-log-filter]').forEach(function (box) {
      box.addEventListener('change', function () {
        var id = box.getAttribute('data-log-filter');
        var table = document.getElementById(id);
        if (!table) return;
        var off = { level: {}, channel: {} };
        document.querySelectorAll('[data-log-filter="' + id + '"]').forEach(function (b) {
          if (!b.checked) off[b.getAttribute('data-filter-by') || 'level'][b.value] = true;
        });
        table.querySelectorAll('tbody tr').forEach(function (row) {
          row.hidden = Boolean(off.level[row.getAttribute('data-level')] || off.channel[row.getAttribute('data-channel')]);
        });
      });
    });
  });
})();
