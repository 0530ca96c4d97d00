"""Calibration: the printable mat, camera intrinsics, and piece and colour profiles.

Modules: `calibration.mat` (board, drawing, detection), `calibration.camera` (intrinsics),
`calibration.profiles` (profile JSON: load, validate, save), `calibration.pieces` (piece and keep
colour measurement on the mat).
"""
