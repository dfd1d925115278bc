// page.js: one Ocean env on a canvas. meta.js (written by pufferlib/web.py) describes the env, its options,
// its keys and the policy; env.js is the env's C with ocean/web/web.h, compiled by emcc.
//
// window.puffer is the page's API for scripts and tests:
//   puffer.ready                    true once the module runs (puffer.error says why when it cannot)
//   puffer.run(steps, seed)         a fresh game from `seed`, `steps` steps at once; returns
//                                   {finished: [episode returns in order], returns: [running return per row]}
//   puffer.start(mode, seed)        mode 'watch' | 'play' | 'versus', from `seed`, paused
//   puffer.tick(n)                  n ticks of the game loop, as the animation frames run them (keys included)
//   puffer.pause(), puffer.resume() stop / restart the animation
//   puffer.frameHash()              a hash of the current frame's pixels
//   puffer.bench(steps, seed)       milliseconds the module takes for `steps` steps (scripts/lab/bench_web.py)
//   puffer.loadedMs                 milliseconds from the navigation to the first frame
'use strict';
(function () {
  const META = window.PUFFER_META;
  const $ = (id) => document.getElementById(id);
  const POLICY_NAMES = {net: 'the trained policy', builtin: 'the env\'s scripted player', random: 'random actions'};
  const state = {
    mode: 'watch', paused: false, held: null, pending: null, sticky: null, pick: 0, carry: 0, last: 0,
    episodes: 0, lastReturn: null, options: {}, seat: 1,
  };
  const api = {ready: false, error: null};
  window.puffer = api;
  let M = null;
  let C = null;

  for (const option of META.options) state.options[option.name] = option.value;

  function showError(text) {
    api.error = text;
    $('error').textContent = text;
  }

  // ---- the module ----

  function bind(module) {
    M = module;
    const f = (name, ret, args) => M.cwrap(name, ret, args);
    C = {
      buffer: f('web_buffer', 'number', ['number']), free: f('web_buffer_free', null, ['number']),
      configBytes: f('web_config_bytes', 'number', []), init: f('web_init', 'number', ['number', 'number', 'number', 'number']),
      error: f('web_error', 'string', []), reset: f('web_reset', null, ['number']), step: f('web_step', 'number', ['number']),
      finished: f('web_finished', 'number', ['number']), ret: f('web_return', 'number', ['number']),
      steps: f('web_steps', 'number', []), agents: f('web_agents', 'number', []), actSize: f('web_act_size', 'number', []),
      live: f('web_live', 'number', ['number']), legal: f('web_legal', 'number', ['number', 'number']),
      numActions: f('web_num_actions', 'number', []), human: f('web_human', null, ['number']),
      humanAction: f('web_human_action', null, ['number', 'number']), frameH: f('web_frame_h', 'number', []),
      frameW: f('web_frame_w', 'number', []), render: f('web_render', 'number', []),
    };
  }

  function packConfig(values) {
    const bytes = new ArrayBuffer(Math.max(4, 4 * META.options.length));
    const view = new DataView(bytes);
    META.options.forEach((option, i) => {
      const v = values[option.name];
      if (option.kind === 'float') view.setFloat32(4 * i, Number(v), true);
      else view.setInt32(4 * i, option.kind === 'bool' ? (v ? 1 : 0) : Math.trunc(Number(v)), true);
    });
    return new Uint8Array(bytes);
  }

  function copyIn(bytes) {
    const p = C.buffer(bytes.length);
    M.HEAPU8.set(bytes, p);
    return p;
  }

  function decode(b64) {
    const text = atob(b64);
    const out = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
    return out;
  }

  const WEIGHTS = META.weights ? decode(META.weights) : new Uint8Array(0);

  // (Re)start the env with the page's options; the versus mode makes both seats rows of a two-seat game.
  function init() {
    const values = Object.assign({}, state.options);
    // versus: both seats are rows, one of them yours; play: you alone against the env's own opponent;
    // watch: as the options say
    if (META.two_seat && state.mode !== 'watch') values.two_player = state.mode === 'versus';
    const config = packConfig(values);
    if (config.length !== C.configBytes()) {
      showError('meta.js and env.js disagree on the options: rebuild the page');
      return false;
    }
    const cp = copyIn(config);
    const wp = WEIGHTS.length ? copyIn(WEIGHTS) : 0;
    const rc = C.init(cp, wp, WEIGHTS.length, META.policy_code);
    C.free(cp);
    if (wp) C.free(wp);
    if (rc !== 0) {
      showError('These options do not start the env: ' + C.error());
      return false;
    }
    api.error = null;
    $('error').textContent = '';
    const humanRow = state.mode === 'play' ? 0 : state.mode === 'versus' ? state.seat : -1;
    C.human(humanRow < C.agents() ? humanRow : -1);
    state.humanRow = humanRow;
    return true;
  }

  function reset(seed) {
    C.reset(seed);
    state.episodes = 0;
    state.lastReturn = null;
    state.held = state.pending = state.sticky = null;
    state.pick = 0;
  }

  // ---- one tick of the game loop ----

  function realTime() { return META.fps !== null && META.fps !== undefined; }

  function setHuman(action) {
    const parts = Array.isArray(action) ? action : [action];
    parts.forEach((v, k) => C.humanAction(k, v));
  }

  function legalMoves(row) {
    const out = [];
    for (let a = 0; a < C.numActions(); a++) if (C.legal(row, a)) out.push(a);
    return out;
  }

  function tick() {
    if (state.mode === 'watch' || state.humanRow < 0) {
      trackEpisodes(() => C.step(1));
      return;
    }
    const row = state.humanRow;
    if (realTime()) {
      let action = state.held !== null ? META.keys[state.held] : META.idle;
      if (action === null || action === undefined) action = state.sticky;
      if (action === null || action === undefined) action = META.idle !== null && META.idle !== undefined ? META.idle : 0;
      setHuman(action);
      trackEpisodes(() => C.step(1));
      return;
    }
    if (!C.live(row)) {  // the other seat's turn: the agent moves
      trackEpisodes(() => C.step(1));
      return;
    }
    if (state.pending === null) return;  // your turn: wait for a key
    setHuman(state.pending);
    state.pending = null;
    trackEpisodes(() => C.step(1));
  }

  function trackEpisodes(step) {
    const count = step();
    if (count > state.episodes) {
      state.episodes = count;
      state.lastReturn = C.finished(count - 1);
    }
  }

  // ---- drawing ----

  const canvas = $('screen');
  const ctx = canvas.getContext('2d');
  let image = null;

  function draw() {
    const h = C.frameH(), w = C.frameW();
    if (h < 1 || w < 1) return;
    if (!image || image.width !== w || image.height !== h) {
      canvas.width = w;
      canvas.height = h;
      const scale = Math.max(1, Math.floor(640 / Math.max(w, h)));
      canvas.style.width = (w * scale) + 'px';
      canvas.style.height = (h * scale) + 'px';
      image = ctx.createImageData(w, h);
    }
    const p = C.render();
    const rgb = M.HEAPU8.subarray(p, p + w * h * 3);
    const px = image.data;
    for (let i = 0, j = 0; i < w * h; i++, j += 3) {
      px[4 * i] = rgb[j];
      px[4 * i + 1] = rgb[j + 1];
      px[4 * i + 2] = rgb[j + 2];
      px[4 * i + 3] = 255;
    }
    ctx.putImageData(image, 0, 0);
    const row = Math.max(0, state.humanRow);
    $('return').textContent = C.ret(row).toFixed(2);
    $('steps').textContent = C.steps();
    $('episodes').textContent = state.episodes;
    $('last').textContent = state.lastReturn === null ? '-' : state.lastReturn.toFixed(2);
    let turn = '';
    if (state.humanRow >= 0 && !realTime()) {
      if (C.live(state.humanRow)) {
        const moves = META.mask ? legalMoves(state.humanRow) : [];
        turn = 'Your move' + (moves.length ? ' (picked: ' + moves[state.pick % moves.length] + ')' : '');
      } else turn = 'The agent moves';
    }
    $('turn').textContent = turn;
  }

  function frame(now) {
    if (!state.paused) {
      const fps = (realTime() ? META.fps : META.default_fps) * Number($('speed').value);
      if (state.last) state.carry += Math.min(0.25, (now - state.last) / 1000) * fps;
      state.last = now;
      let n = Math.floor(state.carry);
      state.carry -= n;
      while (n-- > 0) tick();
      draw();
    } else state.last = 0;
    requestAnimationFrame(frame);
  }

  // ---- the controls ----

  function describeKeys() {
    const names = Object.keys(META.keys).map((k) => (k === ' ' ? 'Space' : k) + ' = ' + JSON.stringify(META.keys[k]));
    let text = names.length ? 'Keys (actions: ' + META.action_help + '): ' + names.join(', ') + '.' : '';
    if (META.mask) text += ' On your turn, "," and "." pick among the legal moves and Enter plays the pick.';
    if (!realTime()) text += ' Each move is one step.';
    $('keys').textContent = text;
  }

  function buildOptions() {
    const form = $('options');
    form.textContent = '';
    for (const option of META.options) {
      if (!option.show) continue;
      const label = document.createElement('label');
      label.title = option.help;
      label.textContent = option.name + ' ';
      const input = document.createElement('input');
      input.type = 'number';
      input.id = 'opt-' + option.name;
      input.value = state.options[option.name];
      input.min = option.min;
      input.max = option.max;
      input.step = option.kind === 'float' ? 'any' : '1';
      label.appendChild(input);
      form.appendChild(label);
    }
  }

  function restart(seed) {
    if (init()) reset(seed);
    draw();
  }

  function readOptions() {
    for (const option of META.options) {
      const input = document.getElementById('opt-' + option.name);
      if (input) state.options[option.name] = option.kind === 'float' ? Number(input.value) : Math.trunc(Number(input.value));
    }
  }

  document.addEventListener('keydown', (e) => {
    if (e.target && e.target.tagName === 'INPUT') return;
    if (META.mask && state.humanRow >= 0 && (e.key === ',' || e.key === '.' || e.key === 'Enter')) {
      const moves = legalMoves(state.humanRow);
      if (e.key === ',') state.pick = (state.pick + moves.length - 1) % Math.max(1, moves.length);
      else if (e.key === '.') state.pick = (state.pick + 1) % Math.max(1, moves.length);
      else if (moves.length) state.pending = moves[state.pick % moves.length];
      e.preventDefault();
      return;
    }
    if (!(e.key in META.keys)) return;
    e.preventDefault();
    state.held = e.key;
    state.sticky = META.keys[e.key];
    if (!e.repeat) state.pending = META.keys[e.key];
  });
  document.addEventListener('keyup', (e) => {
    if (state.held === e.key) state.held = null;
  });

  function setMode(mode) {
    state.mode = mode;
    $('mode').value = mode;
    $('seat-label').style.display = mode === 'versus' ? '' : 'none';
  }

  // ---- start ----

  $('agent').textContent = 'Agent: ' + POLICY_NAMES[META.policy] + (META.source ? ' (' + META.source + ')' : '') + '.';
  if (!META.two_seat) $('mode').querySelector('option[value=versus]').remove();
  setMode('watch');
  describeKeys();
  buildOptions();

  createPuffer().then((module) => {
    bind(module);
    $('mode').addEventListener('change', () => { setMode($('mode').value); restart(Number($('seed').value)); });
    $('seat').addEventListener('change', () => { state.seat = Number($('seat').value); restart(Number($('seed').value)); });
    $('restart').addEventListener('click', () => restart(Number($('seed').value)));
    $('apply').addEventListener('click', () => { readOptions(); restart(Number($('seed').value)); });
    $('pause').addEventListener('click', () => {
      state.paused = !state.paused;
      $('pause').textContent = state.paused ? 'Resume' : 'Pause';
    });
    api.run = (steps, seed) => {
      api.pause();
      setMode('watch');
      if (!init()) return null;
      C.reset(seed);
      const count = C.step(steps);
      const finished = [];
      for (let i = 0; i < Math.min(count, 65536); i++) finished.push(C.finished(i));
      const returns = [];
      for (let r = 0; r < C.agents(); r++) returns.push(C.ret(r));
      state.episodes = count;
      draw();
      return {finished: finished, returns: returns};
    };
    api.start = (mode, seed) => {
      api.pause();
      setMode(mode);
      restart(seed);
      return api.error === null;
    };
    api.tick = (n) => {
      for (let i = 0; i < n; i++) tick();
      draw();
    };
    api.pause = () => { state.paused = true; $('pause').textContent = 'Resume'; };
    api.resume = () => { state.paused = false; $('pause').textContent = 'Pause'; };
    api.frameHash = () => {
      const h = C.frameH(), w = C.frameW();
      const p = C.render();
      const rgb = M.HEAPU8.subarray(p, p + w * h * 3);
      let hash = 2166136261;
      for (let i = 0; i < rgb.length; i++) hash = Math.imul(hash ^ rgb[i], 16777619) >>> 0;
      return hash;
    };
    api.bench = (steps, seed) => {
      api.pause();
      setMode('watch');
      if (!init()) return null;
      C.reset(seed);
      const start = performance.now();
      C.step(steps);
      return performance.now() - start;
    };
    restart(0);
    api.loadedMs = performance.now();
    api.ready = true;
    requestAnimationFrame(frame);
  }, (err) => showError('The WebAssembly module did not load: ' + err));
})();
