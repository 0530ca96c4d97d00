"""Load test of the web app on loopback: `python -m benchmarks.load_test`.

Starts `castellan serve` (waitress) on 127.0.0.1 with a throwaway SQLite database, then 8 concurrent
clients send 200 castle-scoring requests (JSON castles from the rules engine's random game
generator) and 20 photo uploads (rendered sample photos when sample_photos/ has them, else
photo-sized JPEGs). Every answer is checked: castle scores against the rules engine run here, photo
answers for a stored score or a stored refusal with advice (and against the ground truth beside a
sample photo when there is one). Then every returned link is fetched and the database is counted:
no lost record. Bounded in count and time; it stops by itself. Prints requests per second.
"""
from __future__ import annotations

import argparse
import glob
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"  # loopback only


@dataclass
class Outcome:
    kind: str
    ok: bool
    seconds: float
    status: int
    detail: str = ""
    adj_id: str | None = None
    extra: dict = field(default_factory=dict)
    started: float = 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def request(url: str, data: bytes | None, content_type: str | None, timeout: float) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    if content_type:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        body = exc.read()
        try:
            return exc.code, json.loads(body)
        except ValueError:
            return exc.code, {"error": body[:200].decode("utf-8", "replace")}


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes, str]]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    out = io.BytesIO()
    for name, value in fields.items():
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, data, ctype) in files.items():
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                  f"Content-Type: {ctype}\r\n\r\n".encode())
        out.write(data)
        out.write(b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"


def castles(count: int) -> list[tuple[dict, dict]]:
    """(castle, expected castellan-score/1) pairs, scored here by the rules engine."""
    from scoring import parse_castle, score_castle
    from scoring.generate import random_finished_castle

    pairs = []
    distinct = min(count, 40)  # generating is the slow part; 40 different castles, reused
    for seed in range(distinct):
        players = [["red", "blue"], ["red", "blue", "yellow"], ["yellow", "green"]][seed % 3]
        castle = random_finished_castle(seed, players).to_json()
        pairs.append((castle, score_castle(parse_castle(castle)).to_json()))
    return [pairs[i % distinct] for i in range(count)]


def photos(count: int, folder: Path) -> list[tuple[str, bytes, dict | None]]:
    """(name, bytes, ground-truth castle or None): sample photos, else photo-sized JPEGs."""
    found = sorted(p for ext in ("jpg", "jpeg", "png")
                   for p in glob.glob(str(folder / "**" / f"*.{ext}"), recursive=True)
                   if not Path(p).stem.endswith("_mask"))
    items: list[tuple[str, bytes, dict | None]] = []
    for path in found[:count]:
        truth = None
        for candidate in (Path(path).with_suffix(".json"), Path(path).with_name(Path(path).stem + ".truth.json")):
            if candidate.exists():
                try:
                    truth = json.loads(candidate.read_text())
                except ValueError:
                    truth = None
                break
        items.append((Path(path).name, Path(path).read_bytes(), truth))
    if not items:
        import numpy as np
        from PIL import Image

        rng = np.random.default_rng(0)
        for i in range(min(count, 5)):
            buf = io.BytesIO()
            img = (rng.random((1200, 1600, 3)) * 80 + 80).astype("uint8")
            Image.fromarray(img).save(buf, "JPEG", quality=85)
            items.append((f"generated-{i}.jpg", buf.getvalue(), None))
    return [items[i % len(items)] for i in range(count)]


def expected_players(truth: dict) -> dict | None:
    """Ground-truth scores of a sample photo, from its castle (or a stored score) when given."""
    from scoring import parse_castle, score_castle

    if "players" in truth and isinstance(truth.get("players"), dict):
        return {c: p["score"] for c, p in truth["players"].items()}
    castle = truth.get("castle", truth)
    try:
        result = score_castle(parse_castle(castle)).to_json()
    except Exception:
        return None
    return {c: p["score"] for c, p in result["players"].items()}


def score_castle_request(base: str, castle: dict, expected: dict, timeout: float) -> Outcome:
    start = time.perf_counter()
    try:
        status, body = request(base + "/api/score", json.dumps(castle).encode(), "application/json", timeout)
    except Exception as exc:  # a dropped connection is an error, not a crash of the load test
        return Outcome("castle", False, time.perf_counter() - start, 0, f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - start
    ok = (status == 201 and body.get("players") == expected["players"]
          and body.get("winners") == expected["winners"] and body.get("courtyards") == expected["courtyards"])
    return Outcome("castle", ok, seconds, status, "" if ok else str(body)[:200], body.get("id"))


def photo_request(base: str, name: str, data: bytes, truth: dict | None, timeout: float) -> Outcome:
    start = time.perf_counter()
    ctype = "image/png" if name.endswith(".png") else "image/jpeg"
    payload, content_type = multipart({"players": "red,blue"}, {"photo": (name, data, ctype)})
    try:
        status, body = request(base + "/api/score", payload, content_type, timeout)
    except Exception as exc:
        return Outcome("photo", False, time.perf_counter() - start, 0, f"{type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - start
    extra: dict = {"read": status == 201, "refused": status == 422}
    if status == 201:
        ok = body.get("format") == "castellan-score/1" and bool(body.get("id"))
        if truth is not None:
            want = expected_players(truth)
            got = {c: p["score"] for c, p in body.get("players", {}).items()}
            extra["matches_truth"] = want is not None and all(got.get(c, 0) == s for c, s in want.items())
    elif status == 422:
        ok = bool(body.get("refusal")) and bool(body.get("id"))  # a stored refusal with advice
    else:
        ok = False
    return Outcome("photo", ok, seconds, status, "" if ok else str(body)[:200], body.get("id"), extra)


def start_server(database: str, port: int) -> subprocess.Popen:
    env = dict(os.environ, CASTELLAN_SECRET_KEY="load-test")
    proc = subprocess.Popen([sys.executable, "-m", "castellan.cli", "serve", "--host", HOST, "--port", str(port),
                             "--database", str(database), "--threads", "8"],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            urllib.request.urlopen(f"http://{HOST}:{port}/openapi.json", timeout=2).read()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("the server did not start within 60 s")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--castles", type=int, default=200)
    parser.add_argument("--photos", type=int, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--time-limit", type=float, default=600, help="stop sending after this many seconds")
    parser.add_argument("--database", metavar="URL",
                        help="an empty database to use (e.g. postgresql://...); default a throwaway SQLite file")
    parser.add_argument("--photos-from", type=Path, default=ROOT / "sample_photos",
                        help="folder of photos (with ground-truth JSON beside them); default sample_photos/")
    args = parser.parse_args(argv)

    print(f"preparing {args.castles} castles and {args.photos} photos…", flush=True)
    castle_jobs = castles(args.castles)
    photo_jobs = photos(args.photos, args.photos_from)
    with tempfile.TemporaryDirectory(prefix="castellan-load-") as tmp:
        database = args.database or str(Path(tmp) / "load.sqlite3")
        port = free_port()
        server = start_server(database, port)
        base = f"http://{HOST}:{port}"
        deadline = time.time() + args.time_limit
        per_request_timeout = 180.0
        outcomes: list[Outcome] = []
        lock = threading.Lock()

        # Photos spread among the castles, so both kinds are in flight together.
        jobs: list[tuple] = [("castle", c, e) for c, e in castle_jobs]
        step = max(1, len(jobs) // max(1, len(photo_jobs)))
        for i, job in enumerate(photo_jobs):
            jobs.insert(min(len(jobs), i * (step + 1)), ("photo",) + job)

        def run(job: tuple) -> None:
            begin = time.perf_counter()
            if time.time() > deadline:
                outcome = Outcome(job[0], False, 0.0, 0, "not sent: time limit reached")
            elif job[0] == "castle":
                outcome = score_castle_request(base, job[1], job[2], per_request_timeout)
            else:
                outcome = photo_request(base, job[1], job[2], job[3], per_request_timeout)
            outcome.started = begin
            with lock:
                outcomes.append(outcome)

        try:
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=args.clients) as pool:
                list(pool.map(run, jobs))
            elapsed = time.perf_counter() - started

            # No lost record: every returned link answers, and the database holds exactly those.
            ids = [o.adj_id for o in outcomes if o.adj_id]
            missing = []
            for adj_id in ids:
                status, body = request(f"{base}/api/adjudications/{adj_id}", None, None, 30)
                if status != 200 or body.get("id") != adj_id:
                    missing.append(adj_id)
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
        from webapp.storage import open_storage

        storage = open_storage(database)
        stored, stored_images = storage.count(), storage.count_images()
        stored_photos = sum(1 for o in outcomes if o.kind == "photo" and o.adj_id
                            and storage.image(o.adj_id, "photo") is not None)

    castles_out = [o for o in outcomes if o.kind == "castle"]
    photos_out = [o for o in outcomes if o.kind == "photo"]
    failed = [o for o in outcomes if not o.ok]
    errors = [o for o in outcomes if o.status == 0 or o.status >= 500]
    print(f"\n{len(outcomes)} requests from {args.clients} concurrent clients in {elapsed:.1f} s: "
          f"{len(outcomes) / elapsed:.1f} requests per second")
    for label, group in (("castle scoring", castles_out), ("photo upload", photos_out)):
        lat = [o.seconds for o in group]
        good = sum(o.ok for o in group)
        window = (max((o.started + o.seconds for o in group), default=0)
                  - min((o.started for o in group), default=0)) or float("nan")
        print(f"  {label:15s} {len(group):4d} sent, {good:4d} answered correctly, "
              f"latency p50 {percentile(lat, 0.5) * 1000:7.0f} ms, p95 {percentile(lat, 0.95) * 1000:7.0f} ms, "
              f"max {max(lat, default=0) * 1000:7.0f} ms; {len(group) / window:5.1f} per second "
              f"over the {window:.1f} s they were in flight")
    read = sum(o.extra.get("read", False) for o in photos_out)
    refused = sum(o.extra.get("refused", False) for o in photos_out)
    truthful = [o.extra["matches_truth"] for o in photos_out if "matches_truth" in o.extra]
    print(f"  photos: {read} read and scored, {refused} refused with advice"
          + (f", {sum(truthful)}/{len(truthful)} scores equal to the ground truth" if truthful else ""))
    print(f"  stored: {stored} adjudications, {stored_images} images ({stored_photos} of the uploaded photos) "
          f"for {len(ids)} returned ids; "
          f"{len(missing)} links not found")
    print(f"  errors (5xx or connection): {len(errors)}; wrong answers: {len(failed)}")
    for o in failed[:5]:
        print(f"    {o.kind} status {o.status}: {o.detail}")
    photo_ids = sum(1 for o in photos_out if o.adj_id)
    lost = len(missing) + abs(stored - len(ids)) + (photo_ids - stored_photos)
    ok = not failed and not errors and lost == 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
