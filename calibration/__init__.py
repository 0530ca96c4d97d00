"""Calibration: the printable mat, camera intrinsics, and piece and colour profiles.

Modules:
- `calibration.mat`: the ChArUco mat per paper size, `mat_image` (print/texture), `find_mat`
  (image <-> mat-mm homography), `write_mat_pdf`.
- `calibration.camera`: `calibrate_camera` (OpenCV on ChArUco corners), `camera_for_photo` (profile,
  else EXIF 35 mm-equivalent focal, else a 26 mm phone default), `undistort_image`.
- `calibration.profiles`: versioned profile JSON ("castellan-profile/1" with sections camera, pieces,
  colours): `load_profile`, `load_profiles` (CLI `--profile`, repeatable), `profile_from_setting`
  (web app configuration), `parse_profile`, `save_profile`; `ProfileError` names file and field.
- `calibration.pieces`: `measure_pieces` (tower, wall and keep footprints and keep colours from one
  photo of pieces standing on the mat).
- `calibration.synthetic`: exact pinhole views of the mat and of boxes on it (tests, benchmark).
- `calibration.benchmark`: `python -m calibration.benchmark intrinsics|pieces|vision`.
"""
