"""`castellan calibrate camera|pieces`: measure a camera, or a set's pieces and keep colours, on the mat."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_OK = 0
EXIT_BAD_INPUT = 2
MAX_PIXELS = 60_000_000  # 48 MP phones plus headroom; bigger files are refused, not decoded


class _BadInput(Exception):
    pass


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="calibrate a camera, or measure pieces and keep colours, with the mat",
        description="Write or update a calibration profile (JSON) using photos of the printed mat "
                    "(`castellan mat`).")
    sub = parser.add_subparsers(dest="what", metavar="WHAT")
    sub.required = True
    cam = sub.add_parser("camera", help="camera intrinsics from several photos of the mat",
                         description="Calibrate the camera from 3 or more photos of the mat, each from a "
                                     "different angle (35 to 70 degrees up, turning around the mat), the "
                                     "whole mat in view and filling much of the frame.")
    cam.add_argument("photos", nargs="+", help="photos of the mat (JPEG, PNG, HEIC), all from one camera mode")
    cam.add_argument("-o", "--output", required=True, help="profile JSON to write (other sections in it are kept)")
    cam.set_defaults(func=run_camera)
    pcs = sub.add_parser("pieces", help="piece sizes and keep colours from a photo of pieces on the mat",
                         description="Measure one tower, one short wall, one long wall and one keep of each "
                                     "colour standing apart on the mat, photographed from 50 to 90 degrees up "
                                     "under the light you play in (heights are best measured from 50-70 "
                                     "degrees, with the pieces' sides facing the camera on white paper).")
    pcs.add_argument("photo", help="photo of the pieces on the mat")
    pcs.add_argument("-o", "--output", required=True, help="profile JSON to write (other sections in it are kept)")
    pcs.add_argument("--profile", metavar="FILE", action="append", default=[],
                     help="a profile with this camera's intrinsics (improves the measurement)")
    pcs.add_argument("--debug", metavar="FILE", help="write the rectified mat with the pieces outlined to FILE")
    pcs.set_defaults(func=run_pieces)


def read_photo(path: str, data: bytes | None = None):
    """A photo file (or its bytes, already read) as a BGR uint8 array, upright per its EXIF orientation."""
    import io

    import numpy as np
    from PIL import Image, ImageOps

    if data is None:
        data = read_photo_bytes(path)
    try:
        import pillow_heif

        pillow_heif.register_heif_opener()
    except ImportError:  # HEIC support is optional; other formats still work
        pass
    try:
        with Image.open(io.BytesIO(data)) as im:
            if im.width * im.height > MAX_PIXELS:
                raise _BadInput(f"{path}: {im.width}x{im.height} is too big a photo (at most {MAX_PIXELS // 1_000_000} MP)")
            im = ImageOps.exif_transpose(im).convert("RGB")
            rgb = np.asarray(im)
    except _BadInput:
        raise
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise _BadInput(f"{path}: not a readable photo ({exc}); use a JPEG, PNG or HEIC photo") from None
    return np.ascontiguousarray(rgb[:, :, ::-1])


def read_photo_bytes(path: str) -> bytes:
    p = Path(path)
    if not p.is_file():
        raise _BadInput(f"{path}: no such file" if not p.exists() else f"{path}: is not a file")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise _BadInput(f"{path}: cannot be read ({exc})") from None


def _write(profile, output: str):
    from calibration.profiles import save_profile

    if not str(output).lower().endswith(".json"):
        raise _BadInput(f"the output {output!r} must be a .json file")
    try:
        return save_profile(profile, output)
    except OSError as exc:
        raise _BadInput(f"cannot write {output!r}: {exc.strerror or exc}") from None


def run_camera(args: argparse.Namespace) -> int:
    from calibration.camera import CalibrationError, calibrate_camera
    from calibration.profiles import Profile, ProfileError

    try:
        images = [read_photo(p) for p in args.photos]
        result = calibrate_camera(images)
        _write(Profile(camera=result.profile), args.output)
    except (_BadInput, CalibrationError, ProfileError) as exc:
        print(f"castellan calibrate camera: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cam = result.profile
    for i, why in result.skipped.items():
        print(f"  skipped {args.photos[i]}: {why}")
    print(f"wrote {args.output}: camera {cam.image_size[0]}x{cam.image_size[1]}, focal "
          f"{cam.focal_px[0]:.1f} x {cam.focal_px[1]:.1f} px, principal point ({cam.principal_point_px[0]:.1f}, "
          f"{cam.principal_point_px[1]:.1f}), distortion k1={cam.distortion[0]:.4f} k2={cam.distortion[1]:.4f}; "
          f"reprojection error {cam.reprojection_error_px:.3f} px over {cam.views} photos")
    if cam.reprojection_error_px and cam.reprojection_error_px > 1.5:
        print("  warning: the reprojection error is high; retake blurred photos or keep the mat flat")
    return EXIT_OK


def run_pieces(args: argparse.Namespace) -> int:
    from calibration.pieces import PieceMeasureError, measure_pieces
    from calibration.profiles import Profile, ProfileError, load_profiles

    try:
        prof = load_profiles(args.profile)
        data = read_photo_bytes(args.photo)  # read once: pixels and EXIF focal length
        image = read_photo(args.photo, data)
        from calibration.camera import exif_focal_35mm

        focal35 = exif_focal_35mm(data)
        result = measure_pieces(image, camera=prof.camera if prof else None, exif_focal_35mm=focal35)
        if args.debug:
            import cv2

            if not cv2.imwrite(args.debug, result.debug_image):
                raise _BadInput(f"cannot write the debug image {args.debug!r} (use .png or .jpg)")
        # A misread piece (shadow, two pieces touching) must not become a profile that misleads readings.
        _write(Profile(pieces=result.pieces.check_proportions(source=args.photo), colours=result.colours), args.output)
    except (_BadInput, PieceMeasureError, ProfileError) as exc:
        print(f"castellan calibrate pieces: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    p = result.pieces
    print(f"wrote {args.output}:")
    for kind in ("tower", "short_wall", "long_wall", "keep"):
        s = getattr(p, kind)
        h = f", {s.height_mm:.1f} mm high" if s.height_mm is not None else ", height not measured (see the notes)"
        print(f"  {kind.replace('_', ' ')}: {s.footprint_mm[0]:.1f} x {s.footprint_mm[1]:.1f} mm{h}")
    print(f"  lattice pitch {p.lattice_pitch_mm:.1f} mm")
    for colour, kc in result.colours.keeps.items():
        print(f"  {colour} keep: hue {kc.hue_deg:.0f} deg, Lab ({kc.lab[0]:.0f}, {kc.lab[1]:.0f}, {kc.lab[2]:.0f})")
    if result.focal_source != "profile":
        print(f"  camera: no camera profile, focal length from {result.focal_source}; for the best sizes "
              "calibrate the camera first (castellan calibrate camera) and pass --profile")
    for note in result.notes:
        print(f"  note: {note}")
    return EXIT_OK
