// The upload page's form (and a refused result's "add a photo", which shares its element ids): show the
// chosen photo(s), refuse an oversized one at once, and send them with a progress bar (upload, then
// "reading") instead of a frozen page. Without JavaScript the form still posts and redirects.
(function () {
  const form = document.querySelector("form[data-photo-upload]");
  if (!form) return;
  // Two inputs: the camera (capture) and the gallery/files, which may hold several photos of one castle
  // (read together); whichever was used last counts.
  const inputs = [document.getElementById("photo"), document.getElementById("photo-file")];
  const maxPhotos = parseInt(form.dataset.maxPhotos, 10);
  const already = parseInt(form.dataset.already || "0", 10);  // photos stored with the result they are added to
  let chosen = [];
  const mb = function (bytes) { return (bytes / 1048576).toFixed(1) + " MB"; };
  const nameEl = document.getElementById("photo-name");
  const errorEl = document.getElementById("upload-error");
  const progress = document.getElementById("progress");
  const fill = document.getElementById("progress-fill");
  const text = document.getElementById("progress-text");
  const button = document.getElementById("score-button");
  const maxBytes = parseInt(form.dataset.maxBytes, 10);

  function showError(message) {
    errorEl.textContent = message;
    errorEl.hidden = false;
    progress.hidden = true;
    button.disabled = false;
  }

  inputs.forEach(function (input) { input.addEventListener("change", function () {
    errorEl.hidden = true;
    if (!input.files.length) return;
    chosen = Array.from(input.files);
    nameEl.textContent = chosen.length === 1 ? chosen[0].name + " (" + mb(chosen[0].size) + ")"
      : chosen.length + " photos of one castle, read together (" + chosen.map(function (f) { return f.name; }).join(", ") + ")";
    const big = chosen.find(function (f) { return f.size > maxBytes; });
    if (big) showError("The photo " + big.name + " is " + mb(big.size) + "; the limit is " + Math.round(maxBytes / 1048576) + " MB. Send a smaller photo.");
    if (chosen.length > maxPhotos) showError(chosen.length + " photos were chosen; choose at most " + maxPhotos + " photos of one castle.");
  }); });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (!chosen.length) { showError("Choose a photo (or take one) before pressing Score."); return; }
    if (chosen.length > maxPhotos) { showError(chosen.length + " photos were chosen; choose at most " + maxPhotos + " photos of one castle."); return; }
    const empty = chosen.find(function (f) { return f.size === 0; });
    if (empty) { showError("The chosen photo " + empty.name + " is empty (0 bytes). Choose it again or take a new one."); return; }
    const big = chosen.find(function (f) { return f.size > maxBytes; });
    if (big) { showError("The photo " + big.name + " is too large (limit " + Math.round(maxBytes / 1048576) + " MB)."); return; }
    errorEl.hidden = true;
    button.disabled = true;
    progress.hidden = false;
    progress.classList.remove("reading");
    fill.style.width = "0%";
    text.textContent = "Uploading… 0 %";
    const xhr = new XMLHttpRequest();
    xhr.open("POST", form.dataset.api);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.onprogress = function (e) {
      if (!e.lengthComputable) return;
      const pct = Math.round(100 * e.loaded / e.total);
      fill.style.width = pct + "%";
      text.textContent = "Uploading… " + pct + " %";
    };
    xhr.upload.onload = function () {
      fill.style.width = "100%";
      progress.classList.add("reading");
      const reading = chosen.length + already;
      text.textContent = reading === 1 ? "Reading the photo… this takes a few seconds."
        : "Reading the " + reading + " photos… this takes a few seconds each.";
    };
    xhr.onload = function () {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
      if (body && body.url) { text.textContent = "Done."; window.location.href = body.url; return; }
      showError((body && body.error) || ("The server answered " + xhr.status + ". Try again."));
    };
    xhr.onerror = function () { showError("The upload failed (no connection, or the photo is too large). Try again."); };
    const data = new FormData();
    chosen.forEach(function (file) { data.append("photo", file, file.name); });
    form.querySelectorAll('input[name="players"]:checked').forEach(function (box) { data.append("players", box.value); });
    xhr.send(data);
  });
})();
