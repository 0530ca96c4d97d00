// The castle on its lattice (castle-format.md): draws towers, walls, keeps and the scored
// courtyards (tinted by owner, with their points), and, when the page allows it, lets the user
// correct the castle. Every edit is scored at once by the server's rules engine (POST /preview);
// nothing is scored here, so the page can never disagree with the engine.
(function () {
  const dataEl = document.getElementById("castle-data");
  const svg = document.getElementById("lattice");
  if (!dataEl || !svg) return;
  const data = JSON.parse(dataEl.textContent);
  const NS = "http://www.w3.org/2000/svg";
  const S = 40; // pixels per lattice step in the SVG's own units (it scales to the screen)
  const TINT = { red: "#d62828", blue: "#1d4ed8", yellow: "#e0b000", green: "#2a9d3a" };

  let castle = normalise(data.castle || {});
  let result = data.result || null;
  const players = data.players || [];
  const editable = !!data.editable;
  const highlight = data.highlight || null;
  let tool = "tower";
  let pending = null; // first end of a wall being drawn
  let selectedKeep = -1;
  let undo = [];
  let seq = 0; // ignore live scores that come back out of order
  let dirty = false;

  function normalise(c) {
    const out = Object.assign({}, c);
    out.format = "castellan/1";
    out.towers = (c.towers || []).map((t) => [t[0], t[1]]);
    out.walls = (c.walls || []).map((w) => Object.assign({}, w, { from: [w.from[0], w.from[1]], to: [w.to[0], w.to[1]] }));
    out.keeps = (c.keeps || []).map((k) => Object.assign({}, k, { at: [k.at[0], k.at[1]], double: !!k.double }));
    return out;
  }
  const key = (p) => p[0] + "," + p[1];
  function wallKey(w) {
    const a = key(w.from), b = key(w.to);
    return a < b ? a + "|" + b : b + "|" + a;
  }

  function bounds() {
    const xs = [], ys = [];
    castle.towers.forEach((t) => { xs.push(t[0]); ys.push(t[1]); });
    castle.walls.forEach((w) => { xs.push(w.from[0], w.to[0]); ys.push(w.from[1], w.to[1]); });
    castle.keeps.forEach((k) => { xs.push(Math.floor(k.at[0]), Math.ceil(k.at[0])); ys.push(Math.floor(k.at[1]), Math.ceil(k.at[1])); });
    if (!xs.length) return { x0: 0, y0: 0, x1: 6, y1: 6 };
    const pad = editable ? 1 : 0;
    let b = { x0: Math.min(...xs) - pad, y0: Math.min(...ys) - pad, x1: Math.max(...xs) + pad, y1: Math.max(...ys) + pad };
    // An editor needs room to grow: at least 4 steps each way.
    if (editable) { while (b.x1 - b.x0 < 4) { b.x0--; b.x1++; } while (b.y1 - b.y0 < 4) { b.y0--; b.y1++; } }
    return b;
  }
  let B = bounds();
  // Lattice y grows upwards (cells are named by their lower-left corner), SVG y downwards.
  const px = (x) => (x - B.x0 + 0.5) * S;
  const py = (y) => (B.y1 - y + 0.5) * S;

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    (parent || svg).appendChild(e);
    return e;
  }

  function draw() {
    B = bounds();
    svg.innerHTML = "";
    const w = (B.x1 - B.x0 + 1) * S, h = (B.y1 - B.y0 + 1) * S;
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    svg.setAttribute("data-towers", castle.towers.length);
    svg.setAttribute("data-walls", castle.walls.length);
    svg.setAttribute("data-keeps", castle.keeps.length);
    el("rect", { x: 0, y: 0, width: w, height: h, class: "paper" });
    // Courtyards, tinted by owner, with their points at the cell nearest their middle.
    (result && result.courtyards || []).forEach((c) => {
      const colour = c.owner ? TINT[c.owner] || "#888" : "#999";
      const g = el("g", { class: "courtyard" + (c.owner ? "" : " unclaimed"), "data-id": c.id });
      c.cells.forEach((cell) => el("rect", { x: px(cell[0]), y: py(cell[1] + 1), width: S, height: S, fill: colour, "fill-opacity": c.owner ? 0.28 : 0.12 }, g));
      const mx = c.cells.reduce((s, q) => s + q[0] + 0.5, 0) / c.cells.length;
      const my = c.cells.reduce((s, q) => s + q[1] + 0.5, 0) / c.cells.length;
      // Label the cell nearest the middle that has no keep in it (else the nearest, beside its keep).
      const hasKeep = new Set(castle.keeps.map((k) => Math.floor(k.at[0]) + "," + Math.floor(k.at[1])));
      let best = c.cells[0], bd = Infinity;
      c.cells.forEach((q) => { const d = (q[0] + 0.5 - mx) ** 2 + (q[1] + 0.5 - my) ** 2 + (hasKeep.has(key(q)) ? 1000 : 0); if (d < bd) { bd = d; best = q; } });
      const dx = hasKeep.has(key(best)) ? -0.27 : 0, dy = hasKeep.has(key(best)) ? 0.25 : 0;
      el("circle", { cx: px(best[0] + 0.5 + dx), cy: py(best[1] + 0.5 + dy), r: 11, class: "points-bg" }, g);
      const t = el("text", { x: px(best[0] + 0.5 + dx), y: py(best[1] + 0.5 + dy) + 6, class: "points" + (c.owner ? "" : " unclaimed") }, g);
      t.textContent = c.owner ? String(c.points) : "?";
    });
    // Lattice points (also the tap targets of the editor).
    for (let x = B.x0; x <= B.x1; x++) for (let y = B.y0; y <= B.y1; y++) el("circle", { cx: px(x), cy: py(y), r: 2.2, class: "dot", "data-x": x, "data-y": y });
    const added = highlight ? {
      towers: new Set((highlight.towers || []).map(key)),
      walls: new Set((highlight.walls || []).map(wallKey)),
      keeps: new Set((highlight.keeps || []).map((k) => k.colour + key(k.at))),
    } : null;
    // Wall steps the reader barely saw absent (a refused photo's guess): where a missing wall most likely is.
    const drawn = new Set(castle.walls.map(wallKey));
    ((highlight && highlight.absent_walls) || []).forEach((wl) => {
      if (drawn.has(wallKey(wl))) return;
      el("line", { x1: px(wl.from[0]), y1: py(wl.from[1]), x2: px(wl.to[0]), y2: py(wl.to[1]), class: "maybe-wall", "data-key": wallKey(wl) });
    });
    // Lattice points where the reader barely saw no tower: where a missing tower most likely is.
    const towersDrawn = new Set(castle.towers.map(key));
    ((highlight && highlight.absent_towers) || []).forEach((t) => {
      if (towersDrawn.has(key(t))) return;
      el("rect", { x: px(t[0]) - 8, y: py(t[1]) - 8, width: 16, height: 16, rx: 2, class: "maybe-tower", "data-at": key(t) });
    });
    castle.walls.forEach((wl) => {
      const isNew = added && added.walls.has(wallKey(wl));
      const len = Math.abs(wl.from[0] - wl.to[0]) + Math.abs(wl.from[1] - wl.to[1]);
      el("line", { x1: px(wl.from[0]), y1: py(wl.from[1]), x2: px(wl.to[0]), y2: py(wl.to[1]), class: "wall " + (len === 2 ? "long" : "short") + (isNew ? " added" : ""), "data-key": wallKey(wl) });
    });
    castle.towers.forEach((t) => {
      const isNew = added && added.towers.has(key(t));
      el("rect", { x: px(t[0]) - 8, y: py(t[1]) - 8, width: 16, height: 16, rx: 2, class: "tower" + (isNew ? " added" : ""), "data-at": key(t) });
    });
    castle.keeps.forEach((k, i) => {
      const isNew = added && added.keeps.has(k.colour + key(k.at));
      const g = el("g", { class: "keep" + (i === selectedKeep ? " selected" : "") + (isNew ? " added" : ""), "data-colour": k.colour, "data-double": k.double ? "1" : "0" });
      if (k.double) el("rect", { x: px(k.at[0]) - 10, y: py(k.at[1]) - 10, width: 20, height: 20, fill: "none", stroke: TINT[k.colour] || "#555", "stroke-width": 2 }, g);
      el("rect", { x: px(k.at[0]) - 6, y: py(k.at[1]) - 6, width: 12, height: 12, fill: TINT[k.colour] || "#555", class: "keep-body" }, g);
    });
    if (pending) el("circle", { cx: px(pending[0]), cy: py(pending[1]), r: 11, class: "pending" });
    const json = document.getElementById("castle-json");
    if (json && document.activeElement !== json) json.value = JSON.stringify(castle, null, 1);
  }

  function status(message, isError) {
    const s = document.getElementById("edit-status");
    if (!s) return;
    s.textContent = message;
    s.classList.toggle("error", !!isError);
  }

  function rescore(note) {
    const mine = ++seq;
    status("Scoring…");
    fetch(data.preview, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ castle: castle, players: players }) })
      .then((r) => r.json().then((body) => ({ ok: r.ok, body: body })))
      .then(({ ok, body }) => {
        if (mine !== seq) return;
        if (!ok) { status(body.error || "This castle cannot be scored.", true); return; }
        result = body.result;
        const area = document.getElementById("score-area");
        if (area) area.innerHTML = body.html;
        const fcard = document.getElementById("findings-card");
        if (fcard) { fcard.innerHTML = body.findings_html; fcard.hidden = false; }
        status((note ? note + " " : "") + (dirty ? "Score updated. Not saved yet." : "Score updated."));
        draw();
      })
      .catch(() => { if (mine === seq) status("Could not reach the server to score the castle.", true); });
  }

  function change(mutate, note) {
    undo.push(JSON.stringify(castle));
    mutate();
    dirty = true;
    draw();
    rescore(note);
  }

  // Walls meet only at towers (G1) and a long wall is as long as two short walls with a tower between
  // (G3), so a tower is all that tells a long wall from two short ones: the readers' commonest mix-up.
  // Taking away the tower where just two short walls meet in line leaves the long wall they then are,
  // and a tower put on a long wall's middle parts it into two short walls: one tap mends either.
  const steps = (a, b) => Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]);
  const midway = (a, b, p) => a[0] + b[0] === 2 * p[0] && a[1] + b[1] === 2 * p[1];
  function shortWallsInLineAt(p) {
    const at = castle.walls.filter((w) => key(w.from) === key(p) || key(w.to) === key(p));
    if (at.length !== 2) return null;
    const ends = at.map((w) => (key(w.from) === key(p) ? w.to : w.from));
    if (steps(ends[0], p) !== 1 || steps(ends[1], p) !== 1 || !midway(ends[0], ends[1], p)) return null;
    return { walls: at, from: ends[0], to: ends[1] };
  }
  function removeTower(i) {
    const p = castle.towers[i];
    const pair = shortWallsInLineAt(p);
    change(() => {
      castle.towers.splice(i, 1);
      if (pair) {
        castle.walls = castle.walls.filter((w) => !pair.walls.includes(w));
        castle.walls.push({ from: pair.from, to: pair.to });
      }
    }, pair ? "Without the tower the two short walls are one long wall." : "");
  }
  function addTower(p) {
    const long = castle.walls.findIndex((w) => steps(w.from, w.to) === 2 && midway(w.from, w.to, p));
    change(() => {
      castle.towers.push(p);
      if (long >= 0) {
        const w = castle.walls.splice(long, 1)[0];
        castle.walls.push({ from: w.from, to: p }, { from: p, to: w.to });
      }
    }, long >= 0 ? "The tower parts the long wall into two short walls." : "");
  }

  function toLattice(evt) {
    const pt = svg.createSVGPoint();
    pt.x = evt.clientX; pt.y = evt.clientY;
    const p = pt.matrixTransform(svg.getScreenCTM().inverse());
    return [p.x / S - 0.5 + B.x0, B.y1 - (p.y / S - 0.5)];
  }
  const nearestPoint = (q) => [Math.round(q[0]), Math.round(q[1])];
  const near = (q, p, r) => Math.hypot(q[0] - p[0], q[1] - p[1]) <= r;
  function segDist(q, w) {
    const ax = w.from[0], ay = w.from[1], bx = w.to[0], by = w.to[1];
    const t = Math.max(0, Math.min(1, ((q[0] - ax) * (bx - ax) + (q[1] - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)));
    return Math.hypot(q[0] - (ax + t * (bx - ax)), q[1] - (ay + t * (by - ay)));
  }
  function keepAt(q) {
    let best = -1, bd = 0.35;
    castle.keeps.forEach((k, i) => { const d = Math.hypot(q[0] - k.at[0], q[1] - k.at[1]); if (d <= bd) { bd = d; best = i; } });
    return best;
  }

  function select(i) {
    selectedKeep = i;
    const panel = document.getElementById("keep-panel");
    if (panel) {
      panel.hidden = i < 0;
      if (i >= 0) {
        document.getElementById("selected-colour").value = castle.keeps[i].colour;
        document.getElementById("selected-double").checked = !!castle.keeps[i].double;
      }
    }
    draw();
  }

  function onTap(evt) {
    const q = toLattice(evt);
    const p = nearestPoint(q);
    if (tool === "tower") {
      if (!near(q, p, 0.4)) { status("Tap on a lattice point to add or remove a tower."); return; }
      const i = castle.towers.findIndex((t) => key(t) === key(p));
      if (i >= 0) removeTower(i); else addTower(p);
    } else if (tool === "wall") {
      if (!near(q, p, 0.4)) { status("Tap on a lattice point: a wall runs between two points."); return; }
      if (!pending) { pending = p; status("Now tap the wall's other end (1 or 2 steps away)."); draw(); return; }
      const a = pending; pending = null;
      const dx = Math.abs(a[0] - p[0]), dy = Math.abs(a[1] - p[1]);
      if ((dx === 0) === (dy === 0) || dx + dy > 2) { status("A wall joins two points 1 or 2 steps apart in a straight line.", true); draw(); return; }
      const w = { from: a, to: p };
      const i = castle.walls.findIndex((x) => wallKey(x) === wallKey(w));
      change(() => { if (i >= 0) castle.walls.splice(i, 1); else castle.walls.push(w); });
    } else if (tool === "keep") {
      const i = keepAt(q);
      if (i >= 0) { select(i); return; }
      const colour = document.getElementById("keep-colour").value;
      const at = [Math.floor(q[0]) + 0.5, Math.floor(q[1]) + 0.5];
      change(() => { castle.keeps.push({ colour: colour, at: at, double: false }); });
      select(castle.keeps.length - 1);
    } else if (tool === "erase") {
      const k = keepAt(q);
      if (k >= 0) { change(() => castle.keeps.splice(k, 1)); select(-1); return; }
      const t = castle.towers.findIndex((x) => near(q, x, 0.3));
      if (t >= 0) { removeTower(t); return; }
      let best = -1, bd = 0.25;
      castle.walls.forEach((w, i) => { const d = segDist(q, w); if (d < bd) { bd = d; best = i; } });
      if (best >= 0) { change(() => castle.walls.splice(best, 1)); return; }
      status("Nothing to erase there.");
    }
  }

  draw();
  if (!editable) return;

  svg.classList.add("editable");
  svg.addEventListener("click", onTap);
  document.querySelectorAll(".tool").forEach((b) => b.addEventListener("click", () => {
    tool = b.dataset.tool;
    pending = null;
    document.querySelectorAll(".tool").forEach((o) => { o.classList.toggle("active", o === b); o.setAttribute("aria-pressed", o === b ? "true" : "false"); });
    draw();
  }));
  document.getElementById("selected-colour").addEventListener("change", (e) => {
    if (selectedKeep >= 0) change(() => { castle.keeps[selectedKeep].colour = e.target.value; });
  });
  document.getElementById("selected-double").addEventListener("change", (e) => {
    if (selectedKeep >= 0) change(() => { castle.keeps[selectedKeep].double = e.target.checked; });
  });
  document.getElementById("remove-keep").addEventListener("click", () => {
    if (selectedKeep >= 0) { change(() => castle.keeps.splice(selectedKeep, 1)); select(-1); }
  });
  document.getElementById("undo").addEventListener("click", () => {
    if (!undo.length) { status("Nothing to undo."); return; }
    castle = JSON.parse(undo.pop());
    select(-1);
    rescore();
  });
  document.getElementById("load-json").addEventListener("click", () => {
    let parsed;
    try { parsed = JSON.parse(document.getElementById("castle-json").value); } catch (e) { status("That is not valid JSON: " + e.message, true); return; }
    if (!parsed || typeof parsed !== "object") { status("The castle must be a JSON object.", true); return; }
    change(() => { castle = normalise(parsed); });
    select(-1);
  });
  document.getElementById("save").addEventListener("click", (e) => {
    const btn = e.currentTarget;
    btn.disabled = true;
    status("Saving…");
    const create = btn.dataset.create;
    const url = create ? create + (players.length ? "?" + players.map((p) => "players=" + encodeURIComponent(p)).join("&") : "") : btn.dataset.save;
    fetch(url, { method: create ? "POST" : "PUT", headers: { "Content-Type": "application/json", Accept: "application/json" }, body: JSON.stringify(castle) })
      .then((r) => r.json().then((body) => ({ ok: r.ok, body: body })))
      .then(({ ok, body }) => {
        btn.disabled = false;
        if (!ok) { status(body.error || "Could not save.", true); return; }
        dirty = false;
        if (create) { window.location.href = body.url; return; }
        status("Saved: the link now shows the corrected castle.");
      })
      .catch(() => { btn.disabled = false; status("Could not reach the server to save.", true); });
  });
  window.addEventListener("beforeunload", (e) => { if (dirty) { e.preventDefault(); e.returnValue = ""; } });
})();

// The copy button beside a shareable link.
(function () {
  const btn = document.getElementById("copy-link");
  const input = document.getElementById("share-url");
  if (!btn || !input) return;
  btn.addEventListener("click", () => {
    input.select();
    const done = () => { btn.textContent = "Copied"; };
    if (navigator.clipboard) navigator.clipboard.writeText(input.value).then(done, () => document.execCommand("copy") && done());
    else if (document.execCommand("copy")) done();
  });
})();
