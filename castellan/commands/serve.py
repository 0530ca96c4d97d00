"""`castellan serve`: run the web app under waitress, a production WSGI server.

    castellan serve --host 0.0.0.0 --port 8000 --database postgresql://user@db/castellan

The judge key and the cookie secret are read from the environment (CASTELLAN_JUDGE_KEY,
CASTELLAN_SECRET_KEY) rather than the command line, where other users could read them in `ps`.
"""
from __future__ import annotations

import argparse
import logging
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the web app (upload, result, judge pages and JSON API)",
                              description="Serve the Castellan Referee web app with waitress.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; "
                                                       "0.0.0.0 for phones on the network)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--database", metavar="URL",
                   help="sqlite:///PATH, a file path, or postgresql://... (default: CASTELLAN_DATABASE, "
                        "else castellan.sqlite3 in the app's instance folder)")
    p.add_argument("--profile", metavar="FILE",
                   help="calibration profile JSON used for every photo (default: CASTELLAN_PROFILE)")
    p.add_argument("--threads", type=int, default=8, help="worker threads (default 8)")
    p.add_argument("--trusted-proxy", metavar="ADDR",
                   help="address of a reverse proxy (e.g. one terminating HTTPS) whose X-Forwarded-Proto/"
                        "-Host/-For headers are trusted, so shared links use the public address")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        print(f"castellan serve: --port must be 1-65535, not {args.port}", file=sys.stderr)
        return 2
    if args.threads < 1:
        print("castellan serve: --threads must be at least 1", file=sys.stderr)
        return 2
    from waitress import serve

    from webapp import create_app
    from webapp.storage import StorageError

    from calibration.profiles import ProfileError

    config = {"DATABASE": args.database} if args.database else {}
    if args.profile:
        config["PROFILE"] = args.profile
    try:
        app = create_app(config)
    except ProfileError as exc:
        print(f"castellan serve: bad calibration profile: {exc}", file=sys.stderr)
        return 2
    except (StorageError, ValueError, OSError) as exc:
        print(f"castellan serve: cannot open the database: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not app.config.get("JUDGE_KEY"):
        print("castellan serve: no CASTELLAN_JUDGE_KEY set: nobody can mark rulings", file=sys.stderr)
    print(f"Castellan Referee on http://{args.host}:{args.port}/ (database {app.extensions['castellan_storage'].url})",
          file=sys.stderr)
    # Photos of up to 50 MB, two per judge request; waitress's own cap must not be below Flask's.
    proxy = {}
    if args.trusted_proxy:
        proxy = {"trusted_proxy": args.trusted_proxy, "trusted_proxy_count": 1,
                 "trusted_proxy_headers": {"x-forwarded-proto", "x-forwarded-host", "x-forwarded-for"}}
    serve(app, host=args.host, port=args.port, threads=args.threads,
          max_request_body_size=int(app.config["MAX_CONTENT_LENGTH"]) + 1024 * 1024,
          clear_untrusted_proxy_headers=True, ident="castellan", **proxy)
    return 0
