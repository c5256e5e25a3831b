// The run page's live Timeline (internal/console/live.go serves the stream). It follows
// GET /runs/NAME/timeline, appends each timeline row and updates the status line as they happen,
// and reloads the page once when the run reaches a phase the page lays out differently (pending
// approvals, a step to resolve, finished with its answer) — never while a person is writing an
// approval's reason or an answer. Without this script the page refreshes itself (a <noscript>
// refresh). It also shows the answer form while the run waits on an answer, and keeps the run's
// Screen (internal/console/screen.go) current: the frame is fetched again a few times a second
// while the tab is shown and, during a takeover, clicks on it, the type box and the key buttons
// go to the run's browser.
//
// The model's text streams into the Transcript as it arrives ("text" events: pieces with their
// offset in the call's text), and the Transcript and Timeline parts are fetched again
// (GET /runs/NAME/part/WHICH) as steps start and complete, so the journal's text replaces the
// live one. A link to #step-KEY scrolls to that step's row and highlights it; a step's JSON
// loads when its JSON view is opened.
(function () {
  'use strict';
  var root = document.getElementById('run');
  var rows = document.getElementById('timeline');
  var live = document.getElementById('live');
  if (!root || !rows || !live || typeof EventSource === 'undefined') {
    return;
  }
  var name = root.getAttribute('data-run');
  var view = root.getAttribute('data-view');
  var after = Number(rows.getAttribute('data-after')) || 0;
  var source = null;
  var timer = null;
  var delay = 1000;
  var ended = false;
  var status = null;
  var reloading = false;
  var reloadPending = false;
  var submitting = false;

  function show(text) {
    live.hidden = false;
    live.textContent = text;
  }

  function liveText(st) {
    if (st.waitingOn) {
      return 'live — waiting on ' + st.waitingOn.kind;
    }
    return 'live — ' + st.phase.toLowerCase();
  }

  function cell(tr, text) {
    var td = document.createElement('td');
    td.textContent = text || '';
    tr.appendChild(td);
  }

  function addRow(ev) {
    if (ev.seq <= after) {
      return;
    }
    after = ev.seq;
    if (ev.type.indexOf('step.') === 0 || ev.type === 'run.resumed') {
      partsSoon();
    }
    var tr = document.createElement('tr');
    tr.setAttribute('data-seq', String(ev.seq));
    cell(tr, ev.clock);
    cell(tr, ev.type);
    cell(tr, ev.stepKey);
    cell(tr, ev.message);
    rows.appendChild(tr);
  }

  function setText(id, text) {
    var el = document.getElementById(id);
    if (el) {
      el.textContent = text;
    }
    return el;
  }

  // waiting redraws the "Waiting on" line as the page renders it.
  function waiting(w) {
    var el = document.getElementById('waiting');
    if (!el) {
      return;
    }
    while (el.firstChild) {
      el.removeChild(el.firstChild);
    }
    el.hidden = !w;
    if (!w) {
      return;
    }
    el.appendChild(document.createTextNode('Waiting on: ' + w.kind));
    if (w.question) {
      el.appendChild(document.createTextNode(': '));
      var b = document.createElement('b');
      b.textContent = w.question;
      el.appendChild(b);
    }
    var rest = '';
    if (w.stepKey) {
      rest += ' (step ' + w.stepKey + ')';
    }
    if (w.detail) {
      rest += ' — ' + w.detail;
    }
    if (rest) {
      el.appendChild(document.createTextNode(rest));
    }
  }

  function applyStatus(st) {
    if (status && (status.phase !== st.phase || status.reason !== st.reason)) {
      partsSoon(); // the header's runner, start and end
    }
    status = st;
    var pill = document.getElementById('phase-pill');
    if (pill && st.pill && pill.getAttribute('data-drawn') !== st.pill) {
      pill.innerHTML = st.pill; // drawn and escaped by the server
      pill.setAttribute('data-drawn', st.pill);
    }
    setText('phase', st.phase);
    setText('reason', st.reason ? ' (' + st.reason + ')' : '');
    setText('cost', st.cost || '');
    var bar = document.getElementById('cost-bar');
    if (bar && st.costBar && bar.getAttribute('data-drawn') !== st.costBar) {
      bar.innerHTML = st.costBar; // drawn and escaped by the server
      bar.setAttribute('data-drawn', st.costBar);
    }
    waiting(st.waitingOn);
    var form = document.getElementById('answer-form');
    if (form) {
      var w = st.waitingOn;
      form.hidden = !(st.phase === 'Waiting' && w && (w.kind === 'question' || w.kind === 'takeover' || w.kind === 'message'));
    }
    var m = setText('status-message', st.message || '');
    if (m) {
      // The line above says it already when it is what the run waits on.
      m.hidden = !st.message || !!(st.waitingOn && st.waitingOn.detail === st.message);
    }
    if (!ended) {
      show(liveText(st));
    }
    if (st.view !== view) {
      reloadOnce();
    }
  }

  // typing: a person is writing an approval's reason, an answer or text for the run's browser,
  // has written one not sent yet, or is sending a form.
  function typing() {
    if (submitting) {
      return true;
    }
    var fields = document.querySelectorAll('input[name=reason], #answer-text, #screen-text');
    for (var i = 0; i < fields.length; i++) {
      if (fields[i] === document.activeElement || fields[i].value !== '') {
        return true;
      }
    }
    return false;
  }

  function reload() {
    reloading = true;
    window.location.reload();
  }

  function reloadOnce() {
    if (reloading || reloadPending) {
      return;
    }
    if (!typing()) {
      reload();
      return;
    }
    var note = document.getElementById('reload-note');
    if (note) {
      if (note.hidden) {
        note.appendChild(document.createElement('span'));
        var btn = document.createElement('button');
        btn.type = 'button';
        btn.textContent = 'reload now';
        btn.addEventListener('click', reload);
        note.appendChild(btn);
        note.hidden = false;
      }
      note.firstChild.textContent = 'The run is now ' + status.phase + (status.reason ? ' (' + status.reason + ')' : '') +
        '. The page reloads to show it once no reason is being written, or ';
    }
    reloadPending = true;
    setTimeout(function () {
      reloadPending = false;
      reloadOnce();
    }, 2000);
  }

  function finish(text) {
    ended = true;
    if (source) {
      source.close();
      source = null;
    }
    show(text);
  }

  function retry() {
    timer = setTimeout(connect, delay);
    delay = Math.min(delay * 2, 30000);
  }

  function connect() {
    timer = null;
    if (ended || document.hidden) {
      return;
    }
    var es = new EventSource('/runs/' + encodeURIComponent(name) + '/timeline?after=' + after);
    source = es;
    es.addEventListener('open', function () {
      delay = 1000;
      show(status ? liveText(status) : 'live');
    });
    es.addEventListener('timeline', function (e) {
      addRow(JSON.parse(e.data));
    });
    es.addEventListener('status', function (e) {
      applyStatus(JSON.parse(e.data));
    });
    es.addEventListener('text', function (e) {
      streamText(JSON.parse(e.data));
    });
    es.addEventListener('end', function () {
      finish('ended');
    });
    es.addEventListener('gone', function (e) {
      finish('ended: ' + JSON.parse(e.data).message);
    });
    es.addEventListener('error', function () {
      if (ended || source !== es) {
        return;
      }
      show('reconnecting…');
      if (es.readyState === EventSource.CLOSED) {
        // The server refused (signed out, too many streams, a restart): try again later.
        es.close();
        source = null;
        retry();
      }
    });
  }


  // The model's text while a call streams: by step, what is shown and how far into the call's
  // text (in UTF-16 units, as the server counts) it reaches.
  var texts = {};

  function liveEl(step) {
    var els = document.querySelectorAll('[data-live-step]');
    for (var i = 0; i < els.length; i++) {
      if (els[i].getAttribute('data-live-step') === step) {
        return els[i];
      }
    }
    return null;
  }

  function liveItem(step) {
    var found = liveEl(step);
    if (found) {
      return found;
    }
    var list = document.getElementById('transcript-items');
    if (!list) {
      return null;
    }
    // A call the page was drawn before: its entry, added at the end of the transcript.
    var li = document.createElement('li');
    li.className = 'tx tx-model live';
    li.setAttribute('data-step', step);
    var head = document.createElement('div');
    head.className = 'tx-head';
    var who = document.createElement('span');
    who.className = 'tx-who';
    who.textContent = 'Model';
    var link = document.createElement('a');
    link.className = 'tx-step';
    link.href = '#step-' + step;
    link.textContent = step;
    var busy = document.createElement('span');
    busy.className = 'tx-streaming';
    busy.setAttribute('role', 'status');
    busy.textContent = 'writing…';
    head.appendChild(who);
    head.appendChild(document.createTextNode(' '));
    head.appendChild(link);
    head.appendChild(document.createTextNode(' '));
    head.appendChild(busy);
    var text = document.createElement('div');
    text.className = 'tx-text';
    text.setAttribute('data-live-step', step);
    li.appendChild(head);
    li.appendChild(text);
    var answer = list.querySelector('li.tx-answer');
    list.insertBefore(li, answer);
    return text;
  }

  function streamText(d) {
    var t = texts[d.step];
    if (!t) {
      t = texts[d.step] = {shown: '', units: 0, gap: false, done: false};
    }
    if (d.offset === t.units) {
      t.shown += d.text || '';
    } else if (d.offset < t.units && !t.gap) {
      t.shown = t.shown.slice(0, d.offset) + (d.text || ''); // the call started again, or redaction
    } else if (d.offset > t.units) {
      t.gap = true; // pieces were missed: the journal's text fills them in when the step completes
      t.shown += (t.shown ? ' […] ' : '[…] ') + (d.text || '');
    } else {
      t.shown += d.text || '';
    }
    t.units = d.offset + (d.text || '').length;
    if (d.done || d.cut) {
      t.done = true;
    }
    var el = liveItem(d.step);
    if (!el) {
      return;
    }
    el.textContent = t.shown + (d.cut ? ' […]' : '');
    el.setAttribute('data-units', String(t.units));
    if (t.done) {
      var li = el.parentNode;
      var busy = li && li.querySelector('.tx-streaming');
      if (busy) {
        busy.textContent = d.cut ? 'the rest shows once the call is recorded' : 'finishing…';
      }
    }
  }

  // The Transcript and Timeline parts, fetched again (at most one fetch at a time, and not more
  // often than every 500 ms) as steps start and end.
  var partsTimer = null;
  var partsBusy = false;
  var partsAgain = false;

  function partsSoon() {
    if (partsBusy) {
      partsAgain = true;
      return;
    }
    if (!partsTimer) {
      partsTimer = setTimeout(parts, 500);
    }
  }

  // What a person has open in a part (folded tool calls, JSON views), to open again once the
  // part is redrawn.
  function openState(box) {
    var open = {};
    var ds = box.querySelectorAll('details[open]');
    for (var i = 0; i < ds.length; i++) {
      open['d|' + ds[i].className + '|' + (ds[i].getAttribute('data-step') || '')] = true;
    }
    var js = box.querySelectorAll('tr.json-row');
    for (var j = 0; j < js.length; j++) {
      if (!js[j].hidden) {
        open['j|' + js[j].id] = js[j].querySelector('pre').textContent;
      }
    }
    return open;
  }

  function reopen(box, open) {
    var ds = box.querySelectorAll('details');
    for (var i = 0; i < ds.length; i++) {
      if (open['d|' + ds[i].className + '|' + (ds[i].getAttribute('data-step') || '')]) {
        ds[i].open = true;
      }
    }
    var js = box.querySelectorAll('tr.json-row');
    for (var j = 0; j < js.length; j++) {
      var text = open['j|' + js[j].id];
      if (typeof text === 'string') {
        js[j].hidden = false;
        js[j].querySelector('pre').textContent = text;
        js[j].setAttribute('data-loaded', 'true');
        var b = toggleOf(js[j].id);
        if (b) {
          b.setAttribute('aria-expanded', 'true');
        }
      }
    }
    showToggles(box);
  }

  function swap(which) {
    var box = document.getElementById(which + '-part');
    if (!box) {
      return Promise.resolve();
    }
    return fetch('/runs/' + encodeURIComponent(name) + '/part/' + which, {credentials: 'same-origin', cache: 'no-store'}).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (html === null || box.contains(document.activeElement) && document.activeElement !== document.body &&
          document.activeElement.tagName !== 'A') {
        return; // not under a person's focus (a JSON view being read, say): the next change redraws it
      }
      var open = openState(box);
      box.innerHTML = html; // drawn and escaped by the server, this origin only
      reopen(box, open);
      var els = box.querySelectorAll('[data-live-step]');
      for (var i = 0; i < els.length; i++) {
        var t = texts[els[i].getAttribute('data-live-step')];
        if (t) {
          els[i].textContent = t.shown;
        }
      }
      // A step no longer live has its text from the journal now.
      if (which === 'transcript') {
        for (var k in texts) {
          if (Object.prototype.hasOwnProperty.call(texts, k) && !liveEl(k)) {
            delete texts[k];
          }
        }
      }
      highlight(false);
    }, function () {});
  }

  function parts() {
    partsTimer = null;
    partsBusy = true;
    partsAgain = false;
    Promise.all([swap('transcript'), swap('timeline'), swap('facts')]).then(function () {
      partsBusy = false;
      if (partsAgain) {
        partsSoon();
      }
    });
  }

  // A deep link to a step (#step-KEY): its row scrolls into view, highlighted, and takes focus.
  function highlight(scroll) {
    var h = window.location.hash;
    var old = document.querySelectorAll('.step-target');
    for (var i = 0; i < old.length; i++) {
      old[i].classList.remove('step-target');
    }
    if (h.indexOf('#step-') !== 0) {
      return;
    }
    var id;
    try {
      id = decodeURIComponent(h.slice(1));
    } catch (e) {
      id = h.slice(1);
    }
    var row = document.getElementById(id);
    if (!row) {
      return;
    }
    row.classList.add('step-target');
    if (scroll) {
      row.setAttribute('tabindex', '-1');
      row.scrollIntoView({block: 'center'});
      row.focus({preventScroll: true});
    }
  }

  function toggleOf(rowID) {
    var bs = document.querySelectorAll('button.json-toggle');
    for (var i = 0; i < bs.length; i++) {
      if (bs[i].getAttribute('aria-controls') === rowID) {
        return bs[i];
      }
    }
    return null;
  }

  // The JSON buttons work with this script only (without it, the "raw" link serves the JSON).
  function showToggles(box) {
    var bs = box.querySelectorAll('button.json-toggle');
    for (var i = 0; i < bs.length; i++) {
      bs[i].hidden = false;
    }
  }

  // A step's JSON view: the row under the step's, loaded when first opened.
  function toggleJSON(btn) {
    var row = document.getElementById(btn.getAttribute('aria-controls'));
    if (!row) {
      return;
    }
    var open = row.hidden;
    row.hidden = !open;
    btn.setAttribute('aria-expanded', open ? 'true' : 'false');
    if (!open || row.getAttribute('data-loaded') === 'true') {
      return;
    }
    var link = btn.parentNode.querySelector('a');
    var pre = row.querySelector('pre');
    row.setAttribute('data-loaded', 'true');
    pre.textContent = 'loading…';
    fetch(link.getAttribute('href'), {credentials: 'same-origin', cache: 'no-store'}).then(function (r) {
      return r.text().then(function (t) {
        pre.textContent = r.ok ? t : 'could not load the step: ' + t;
      });
    }, function () {
      row.setAttribute('data-loaded', 'false');
      pre.textContent = 'could not reach the server';
    });
  }

  function steps() {
    window.addEventListener('hashchange', function () {
      highlight(true);
    });
    highlight(true);
    showToggles(document);
    document.addEventListener('click', function (e) {
      var b = e.target && e.target.closest ? e.target.closest('button.json-toggle') : null;
      if (b) {
        toggleJSON(b);
      }
    });
    // A bar of the timeline's chart goes to its step's row (the table is the keyboard's way).
    document.addEventListener('click', function (e) {
      var t = e.target;
      if (t && t.getAttribute && t.getAttribute('data-step') && t.closest && t.closest('svg.waterfall')) {
        window.location.hash = 'step-' + t.getAttribute('data-step');
      }
    });
  }

  // A hidden tab lets go of its stream (a browser opens only a few connections to one server)
  // and catches up from the last row it has when shown again.
  document.addEventListener('visibilitychange', function () {
    if (ended) {
      return;
    }
    if (document.hidden) {
      if (source) {
        source.close();
        source = null;
      }
      if (timer) {
        clearTimeout(timer);
        timer = null;
      }
      show('paused while the tab is hidden');
    } else if (!source && !timer) {
      show('reconnecting…');
      connect();
    }
  });
  document.addEventListener('submit', function (e) {
    if (e.target && e.target.id === 'screen-type') {
      return; // sent by script; the page stays
    }
    submitting = true;
  }, true);

  // The run's Screen. Each frame is fetched whole and decoded before it replaces the one on show,
  // so the image never goes blank or broken (and the page never jumps under a person's pointer)
  // when a frame is slow or fails: the last good frame stays, and a line under it says why it is
  // not current.
  var screenImg = document.getElementById('screen-img');
  var screenBox = document.getElementById('screen');
  var screenNote = document.getElementById('screen-note');
  var screenState = document.getElementById('screen-state');
  var frameTimer = null;
  var frameLoading = false;
  var frameSoon = false; // a person acted while a frame was loading: fetch the next one at once
  var shownURL = null; // the object URL of the frame on show
  var frameEvery = 300; // ms between frames: about three a second

  function note(text) {
    if (screenNote) {
      screenNote.textContent = text || '';
    }
  }

  function frameState(text) {
    if (screenState) {
      screenState.textContent = text || '';
      screenState.hidden = !text;
    }
  }

  function frameURL() {
    return '/runs/' + encodeURIComponent(name) + '/screen.jpg';
  }

  function decoded(img) {
    if (img.decode) {
      return img.decode();
    }
    return new Promise(function (ok, fail) {
      img.onload = ok;
      img.onerror = fail;
    });
  }

  function nextFrame() {
    frameTimer = null;
    if (ended || document.hidden || frameLoading) {
      return;
    }
    frameLoading = true;
    frameSoon = false;
    fetch(frameURL() + '?t=' + Date.now(), {credentials: 'same-origin', cache: 'no-store'}).then(function (r) {
      if (!r.ok) {
        return r.text().then(function (t) {
          throw new Error(t.trim() || 'the server answered HTTP ' + r.status);
        });
      }
      return r.blob();
    }, function () {
      throw new Error('could not reach the server');
    }).then(function (blob) {
      var url = URL.createObjectURL(blob);
      var next = new Image();
      next.src = url;
      return decoded(next).then(function () {
        var old = shownURL;
        shownURL = url;
        screenImg.src = url;
        if (old) {
          URL.revokeObjectURL(old);
        }
      }, function () {
        URL.revokeObjectURL(url);
        throw new Error('the frame could not be decoded');
      });
    }).then(function () {
      frameLoading = false;
      frameState('');
      scheduleFrame(frameSoon ? 0 : frameEvery);
    }, function (err) {
      frameLoading = false;
      frameState('The screen is not current: ' + err.message + '. It shows the last frame and tries again.');
      scheduleFrame(frameSoon ? 0 : 3000);
    });
  }

  function scheduleFrame(delay) {
    if (!frameTimer && !ended) {
      frameTimer = setTimeout(nextFrame, delay);
    }
  }

  function frameNow() {
    if (frameLoading) {
      frameSoon = true;
      return;
    }
    if (frameTimer) {
      clearTimeout(frameTimer);
      frameTimer = null;
    }
    scheduleFrame(50);
  }

  // act sends a person's click, text or key to the run's browser and says how it went.
  function act(action, body) {
    note('sending…');
    return fetch('/runs/' + encodeURIComponent(name) + '/screen/' + action, {
      method: 'POST',
      credentials: 'same-origin',
      headers: {'Content-Type': 'application/json', 'X-CSRF-Token': screenBox.getAttribute('data-csrf')},
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().then(function (j) {
        return {ok: r.ok, text: r.ok ? j.message : j.error};
      }, function () {
        return {ok: false, text: 'the server answered HTTP ' + r.status};
      });
    }).then(function (res) {
      note(res.text);
      frameNow();
      return res.ok;
    }, function () {
      note('could not reach the server');
      return false;
    });
  }

  function startScreen() {
    document.addEventListener('visibilitychange', function () {
      if (!document.hidden) {
        scheduleFrame(0);
      }
    });
    if (screenBox.getAttribute('data-control') === 'true') {
      screenImg.addEventListener('click', function (e) {
        if (!screenImg.naturalWidth || !screenImg.clientWidth) {
          note('the screen has not loaded yet: click again once it shows');
          return;
        }
        // From the image as shown to the viewport: a frame has one pixel per CSS pixel.
        var r = screenImg.getBoundingClientRect();
        var x = Math.floor((e.clientX - r.left - screenImg.clientLeft) * screenImg.naturalWidth / screenImg.clientWidth);
        var y = Math.floor((e.clientY - r.top - screenImg.clientTop) * screenImg.naturalHeight / screenImg.clientHeight);
        act('click', {x: x, y: y});
      });
      var form = document.getElementById('screen-type');
      var field = document.getElementById('screen-text');
      form.addEventListener('submit', function (e) {
        e.preventDefault();
        if (!field.value) {
          return;
        }
        act('type', {text: field.value}).then(function (ok) {
          if (ok) {
            field.value = '';
          }
        });
      });
      var keys = form.querySelectorAll('button[data-key]');
      for (var i = 0; i < keys.length; i++) {
        keys[i].addEventListener('click', function (e) {
          act('key', {key: e.currentTarget.getAttribute('data-key')});
        });
      }
    }
    // The page's own frame (shown without JavaScript too) is replaced by a current one now.
    scheduleFrame(0);
  }

  if (screenImg && screenBox && typeof fetch !== 'undefined') {
    startScreen();
  }

  steps();
  if (root.getAttribute('data-streaming') !== 'true') {
    show('ended');
    return;
  }
  show('connecting…');
  connect();
}());
