// The layout's script, loaded in <head> of every console page (before the body, so the theme a
// person chose applies before the first paint). It keeps the theme toggle (auto, light, dark;
// remembered in localStorage; auto follows prefers-color-scheme), shows and works the Copy
// buttons of copyable ids, and the runs list's "select all" box.
(function () {
  'use strict';
  var KEY = 'agentrun-theme';
  var root = document.documentElement;

  function stored() {
    try {
      return window.localStorage.getItem(KEY) || 'auto';
    } catch (e) {
      return 'auto';
    }
  }

  function apply(theme) {
    if (theme === 'light' || theme === 'dark') {
      root.setAttribute('data-theme', theme);
    } else {
      root.removeAttribute('data-theme');
    }
  }

  apply(stored());

  function ready() {
    var toggle = document.getElementById('theme-toggle');
    if (toggle) {
      var label = function (t) {
        toggle.textContent = 'Theme: ' + t;
        toggle.setAttribute('aria-label', 'Colour theme: ' + t + ' (change)');
      };
      label(stored());
      toggle.hidden = false;
      toggle.addEventListener('click', function () {
        var order = ['auto', 'light', 'dark'];
        var next = order[(order.indexOf(stored()) + 1) % order.length];
        try {
          window.localStorage.setItem(KEY, next);
        } catch (e) {
          // Private mode: the choice lasts for this page only.
        }
        apply(next);
        label(next);
      });
    }

    var copies = document.querySelectorAll('button.copy[data-copy]');
    Array.prototype.forEach.call(copies, function (b) {
      b.hidden = false;
      b.addEventListener('click', function () {
        var text = b.getAttribute('data-copy');
        var done = function () {
          b.textContent = 'Copied';
          setTimeout(function () { b.textContent = 'Copy'; }, 1500);
        };
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(text).then(done, function () {});
          return;
        }
        var ta = document.createElement('textarea');
        ta.value = text;
        document.body.appendChild(ta);
        ta.select();
        try {
          document.execCommand('copy');
          done();
        } catch (e) {
          // Nothing to do: the id is on the page to select by hand.
        }
        document.body.removeChild(ta);
      });
    });

    // A live page (body data-refresh="N") reloads every N seconds, unless the person paused it
    // or is typing into a field, or a <details> of the page is open.
    var every = Number(document.body.getAttribute('data-refresh')) || 0;
    var pause = document.getElementById('live-pause');
    if (every > 0 && pause) {
      var paused = false;
      var state = document.getElementById('live-state');
      pause.hidden = false;
      pause.addEventListener('click', function () {
        paused = !paused;
        pause.setAttribute('aria-pressed', String(paused));
        pause.textContent = paused ? 'Resume updates' : 'Pause updates';
        state.textContent = paused ? 'Updates paused.' : 'Updates every ' + every + ' s.';
      });
      setInterval(function () {
        var a = document.activeElement;
        var typing = a && (a.tagName === 'INPUT' || a.tagName === 'TEXTAREA' || a.tagName === 'SELECT');
        if (!paused && !typing && !document.querySelector('details[open]') && !document.hidden) {
          window.location.reload();
        }
      }, every * 1000);
    }

    var all = document.getElementById('select-all');
    if (all) {
      all.hidden = false;
      var boxes = document.querySelectorAll('input[name=run][type=checkbox]');
      all.addEventListener('change', function () {
        Array.prototype.forEach.call(boxes, function (x) { x.checked = all.checked; });
      });
    }
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', ready);
  } else {
    ready();
  }
})();
