// Upload page: show the chosen photo, refuse an oversized one at once, and send the photo with a
// progress bar (upload, then "reading") instead of a frozen page. Without JavaScript the form
// still posts and redirects.
(function () {
  const form = document.getElementById("upload-form");
  if (!form) return;
  // Two inputs: the camera (capture) and the gallery/files; whichever was used last counts.
  const inputs = [document.getElementById("photo"), document.getElementById("photo-file")];
  let chosen = null;
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
    const file = input.files[0];
    if (!file) return;
    chosen = file;
    nameEl.textContent = file.name + " (" + (file.size / 1048576).toFixed(1) + " MB)";
    if (file.size > maxBytes) showError("This photo is " + (file.size / 1048576).toFixed(1) + " MB; the limit is " + Math.round(maxBytes / 1048576) + " MB. Send a smaller photo.");
  }); });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const file = chosen;
    if (!file) { showError("Choose a photo (or take one) before pressing Score."); return; }
    if (file.size === 0) { showError("The chosen photo is empty (0 bytes). Choose it again or take a new one."); return; }
    if (file.size > maxBytes) { showError("This photo is too large (limit " + Math.round(maxBytes / 1048576) + " MB)."); return; }
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
      text.textContent = "Reading the photo… this takes a few seconds.";
    };
    xhr.onload = function () {
      let body = null;
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
      if (body && body.url) { text.textContent = "Done."; window.location.href = body.url; return; }
      showError((body && body.error) || ("The server answered " + xhr.status + ". Try again."));
    };
    xhr.onerror = function () { showError("The upload failed (no connection, or the photo is too large). Try again."); };
    const data = new FormData();
    data.append("photo", file, file.name);
    form.querySelectorAll('input[name="players"]:checked').forEach(function (box) { data.append("players", box.value); });
    xhr.send(data);
  });
})();
