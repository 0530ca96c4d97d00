"""How far the photo around a grey piece is from the piece's appearance model, for one step of its
appearance fit (pieces._appearance), and the box geometry it is built from, compiled with numba.

A step lays the piece's visible faces (body, merlons, tabs, slots: some forty for a wall) over the
window of the photo around it, works out which face each pixel shows (merlons in front of the body,
the body in front of a wall's tabs, a tower's slot openings showing the slots' insides), fits a colour
to each face and adds each pixel's misfit. A photo's measurement takes some 80 000 steps. As numpy
geometry, a few dozen numpy operations and a numba call per face, the per-call overhead cost more
than the arithmetic; one call for it all, on the part of the window the faces cover, takes two to
three times less (session 67). The arithmetic is the numpy version's, operation for operation; only
the last sum over the window is taken in another order, so costs agree with it to rounding, not bit
for bit (sizes on the test renders to 3e-11 mm).

Compiling it once per machine took some 25 s of CPU, most of it numba compiling functions once for each
Python constant passed them as a literal and its error formatting for array assignments; with numpy
constants and element-wise assignments it takes 12-14 s. The passes over the maps keep to the pixels
each layer's faces cover, and each face's colour fit sums in one pass: a step takes a fifth less time
(session 82; costs unchanged to the bit on 5,855 steps recorded from two test renders). The scan for each
region's points keeps to the columns its faces may cover in each row, not its faces' whole box (about an
eighth of what that box held), and a face's edge terms fixed along a row are taken out of the loop over its
columns: together a step takes 0.76-0.88 of the time it took (three runs; session 84, the same costs to the bit
on 1,464 recorded steps).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from calibration.cover_kernel import edge_planes

# What a face is in the appearance model, which decides what it hides and what hides it.
# (numpy integers, not Python ones: numba would compile a function once for each constant it is
# passed as a literal, which took most of the kernel's compile time.)
MERLON = np.int64(0)  # stands on the body: hides the body behind it
SLOT_OPENING = np.int64(1)  # a tower's slot opening in a side: hides the side, shows the slot's inside
SLOT_INSIDE = np.int64(2)  # a slot's back or wall: seen only through its opening
BODY = np.int64(3)  # the body's top and sides, where no merlon or slot opening hides them
TAB = np.int64(4)  # a wall's tab, where the body does not hide it
_SIDE = np.int64(0)  # (a face coded by its side: add_box_faces's inside_code where nothing is inside)
_SCALED, _UNSCALED = np.bool_(True), np.bool_(False)

_CODE_OFFSET = 8  # face orientation codes (pieces: TOP = -1 and below, sides 0..3) as indices from 0


# Which of the codes (an array passed to piece_faces) names which orientation (pieces: TOP, ...).
CODE_TOP, CODE_MERLON_TOPS, CODE_SLOT_INSIDE, CODE_CROWN_INSIDE = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def box_corners(params: np.ndarray, nadir: np.ndarray, cam_z: float) -> np.ndarray:
    """A box's footprint corners (4) and top corners projected onto the mat (4), in mat mm, and with 9
    parameters a wall's tabs' (8 each): pieces._box_corners."""
    cx, cy, theta, length, width, height = params[0], params[1], params[2], params[3], params[4], params[5]
    ax = (math.cos(theta), math.sin(theta))
    ay = (-ax[1], ax[0])
    out = np.empty((24 if params.shape[0] == 9 else 8, 2))
    k = cam_z / max(cam_z - height, 1e-3)
    for i in range(4):
        for j in range(2):
            # (In the order numpy broadcast it before: the same corners to the last bit.)
            out[i, j] = ((cx, cy)[j] + _CORNER_ALONG[i] * ax[j] * length) + _CORNER_ACROSS[i] * ay[j] * width
            out[4 + i, j] = nadir[j] + k * (out[i, j] - nadir[j])
    if params.shape[0] == 9:
        depth, tab_w, tab_h = params[6] * width, params[7] * width, params[8] * height
        kt = cam_z / max(cam_z - tab_h, 1e-3)
        for t, sign in enumerate((-1.0, 1.0)):
            along = (length / 2 * sign, (length / 2 + depth) * sign, (length / 2 + depth) * sign, length / 2 * sign)
            for i in range(4):
                for j in range(2):
                    foot = ((cx, cy)[j] + along[i] * ax[j]) + _TAB_ACROSS[i] * ay[j] * tab_w
                    out[8 + 8 * t + i, j] = foot
                    out[12 + 8 * t + i, j] = nadir[j] + kt * (foot - nadir[j])
    return out


_CORNER_ALONG = (0.5, 0.5, -0.5, -0.5)  # a footprint's corners as shares of its length along the piece
_CORNER_ACROSS = (0.5, -0.5, -0.5, 0.5)  # and of its width across it
_TAB_ACROSS = (0.5, 0.5, -0.5, -0.5)  # (a tab's corners, from its end at the body outwards)


@njit(cache=True, nogil=True)
def side_normals(theta: float) -> np.ndarray:
    """The outward normals of a piece turned `theta` (radians): its sides along +x, -y, -x, +y."""
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, s], [s, -c], [-c, -s], [-s, c]])


@njit(cache=True, nogil=True)
def add_box_faces(base: np.ndarray, top: np.ndarray, nadir: np.ndarray, axes: np.ndarray, inside: np.ndarray,
                   top_code: int, inside_code: int, layer_of: int, polys: np.ndarray, layer: np.ndarray,
                   code: np.ndarray, n: int) -> int:
    """Append a box's faces the camera sees (footprint `base` and top `top`, (4, 2) each) to polys,
    layer and code from index n; return the new count. Its top is coded `top_code`, the sides facing
    the camera's foot point by the closest of `axes` (outward normals), or `inside_code` where
    `inside` (4 booleans, by orientation; empty: none) marks that orientation."""
    _set_face(polys, n, top[0], top[1], top[2], top[3])
    layer[n], code[n] = layer_of, top_code
    n += 1
    cx = ((base[0, 0] + base[1, 0]) + base[2, 0] + base[3, 0]) / 4
    cy = ((base[0, 1] + base[1, 1]) + base[2, 1] + base[3, 1]) / 4
    for i in range(4):
        j = (i + 1) % 4
        mx, my = (base[i, 0] + base[j, 0]) / 2, (base[i, 1] + base[j, 1]) / 2
        ox, oy = mx - cx, my - cy
        if ox * (nadir[0] - mx) + oy * (nadir[1] - my) <= 0:
            continue  # the camera is on the side's inner side
        named, best = 0, ox * axes[0, 0] + oy * axes[0, 1]
        for a in range(1, 4):
            v = ox * axes[a, 0] + oy * axes[a, 1]
            if v > best:
                named, best = a, v
        _set_face(polys, n, base[i], base[j], top[j], top[i])
        layer[n] = layer_of
        code[n] = inside_code if inside.shape[0] > 0 and inside[named] else named
        n += 1
    return n


@njit(cache=True, nogil=True)
def piece_faces(params: np.ndarray, nadir: np.ndarray, cam_z: float, crown_share: float, crown: np.ndarray,
                slot: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The projected piece's visible faces as convex polygons on the mat (faces, 4, 2), each one's role
    in the appearance model (MERLON .. TAB) and its orientation code (`codes`: the codes of its top,
    its merlons' tops, a slot's inside and a merlon's inner face, CODE_TOP ...; 0..3 the sides along
    +x, -y, -x, +y of the piece): faces of one code are lit alike.

    `crown`: the merlons on its top (boxes (u0, u1, v0, v1) in mm along and across it from its centre;
    empty for a plain box), standing from `crown_share` of its height up; the piece's height is theirs,
    its body ending at their foot. `slot`: a tower's slot down each side (width and depth as shares of
    its side, top as a share of its height; empty: none)."""
    axes = side_normals(params[2])
    corners = box_corners(params, nadir, cam_z)
    n_tabs = (corners.shape[0] - 8) // 8
    size = 3 * (crown.shape[0] + 1 + n_tabs) + 2 * 3
    polys, layer, code = np.empty((size, 4, 2)), np.empty(size, np.int64), np.empty(size, np.int64)
    no_inside = np.zeros(0, np.bool_)
    n = np.int64(0)  # (not the literal 0: see MERLON)
    height = params[5]
    if crown.shape[0] == 0:
        body = corners[:8].copy()
    else:
        body_params = params[:6].copy()
        body_params[5] = (1.0 - crown_share) * height  # the merlons' foot
        body = box_corners(body_params, nadir, cam_z)
        k_foot = cam_z / max(cam_z - body_params[5], 1e-3)
        k_top = cam_z / max(cam_z - height, 1e-3)
        ax, ay = axes[0], axes[3]
        # A merlon's sides that are not flush with the piece's own face its top between the merlons
        # (CODE_CROWN_INSIDE); the tolerance keeps a wall's last merlon, whose end is summed up to the
        # wall's, flush with it.
        half_l, half_w = 0.5 * params[3] * (1 - 1e-9), 0.5 * params[4] * (1 - 1e-9)
        foot, top = np.empty((4, 2)), np.empty((4, 2))
        inside = np.empty(4, np.bool_)
        for b in range(crown.shape[0]):
            u0, u1, v0, v1 = crown[b, 0], crown[b, 1], crown[b, 2], crown[b, 3]
            along, across = (u1, u1, u0, u0), (v1, v0, v0, v1)
            for i in range(4):
                for j in range(2):
                    xy = (params[j] + along[i] * ax[j]) + across[i] * ay[j]
                    foot[i, j] = nadir[j] + k_foot * (xy - nadir[j])
                    top[i, j] = nadir[j] + k_top * (xy - nadir[j])
            inside[0], inside[1], inside[2], inside[3] = u1 < half_l, v0 > -half_w, u0 > -half_l, v1 < half_w
            n = add_box_faces(foot, top, nadir, axes, inside, codes[CODE_MERLON_TOPS], codes[CODE_CROWN_INSIDE],
                               MERLON, polys, layer, code, n)
    body_at = n
    n = add_box_faces(body[:4], body[4:8], nadir, axes, no_inside, codes[CODE_TOP], _SIDE, BODY, polys, layer, code, n)
    body_end = n
    for t in range(n_tabs):
        n = add_box_faces(corners[8 + 8 * t:12 + 8 * t], corners[12 + 8 * t:16 + 8 * t], nadir, axes, no_inside,
                           codes[CODE_TOP], _SIDE, TAB, polys, layer, code, n)
    if slot.shape[0] > 0:
        width, depth, slot_top = slot[0], slot[1], slot[2]
        k = cam_z / max(cam_z - slot_top * height, 1e-3)
        for f in range(body_at + 1, body_end):  # the body's sides (its top first)
            b0, b1 = polys[f, 0].copy(), polys[f, 1].copy()  # the side's foot
            along = b1 - b0
            side_mm = math.sqrt(along[0] * along[0] + along[1] * along[1])
            u, nrm = along / max(side_mm, 1e-9), axes[code[f]]
            mid, half, inward = (b0 + b1) / 2, u * width * side_mm / 2, -nrm * depth * side_mm
            s = 1.0 if (nadir[0] - mid[0]) * u[0] + (nadir[1] - mid[1]) * u[1] >= 0 else -1.0
            # Its opening, then inside it the slot's back and the one of its walls turned towards the
            # camera (what the opening shows of neither is the mat).
            n = _add_upright(mid - half, mid + half, nadir, k, SLOT_OPENING, codes[CODE_SLOT_INSIDE], polys, layer,
                             code, n)
            n = _add_upright(mid - half + inward, mid + half + inward, nadir, k, SLOT_INSIDE,
                             codes[CODE_SLOT_INSIDE], polys, layer, code, n)
            n = _add_upright(mid - s * half, mid - s * half + inward, nadir, k, SLOT_INSIDE,
                             codes[CODE_SLOT_INSIDE], polys, layer, code, n)
    return polys[:n], layer[:n], code[:n]


@njit(cache=True, nogil=True)
def _set_face(polys: np.ndarray, n: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> None:
    """polys[n] = the corners a, b, c, d (element by element: an array assignment's shape check would
    compile numba's error formatting with it)."""
    polys[n, 0, 0], polys[n, 0, 1] = a[0], a[1]
    polys[n, 1, 0], polys[n, 1, 1] = b[0], b[1]
    polys[n, 2, 0], polys[n, 2, 1] = c[0], c[1]
    polys[n, 3, 0], polys[n, 3, 1] = d[0], d[1]


@njit(cache=True, nogil=True)
def _add_upright(a: np.ndarray, b: np.ndarray, nadir: np.ndarray, k: float, layer_of: int, code_of: int,
                 polys: np.ndarray, layer: np.ndarray, code: np.ndarray, n: int) -> int:
    """Append the face standing on the foot a-b up to where `k` projects it (k = cam_z / (cam_z - top))."""
    _set_face(polys, n, a, b, nadir + k * (b - nadir), nadir + k * (a - nadir))
    layer[n], code[n] = layer_of, code_of
    return n + 1


@njit(cache=True, nogil=True)
def appearance_misfit(params: np.ndarray, nadir: np.ndarray, cam_z: float, crown_share: float, crown: np.ndarray,
                      slot: np.ndarray, codes: np.ndarray, shade_sides: bool,
                      xs: np.ndarray, ys: np.ndarray, x0: float, y0: float, step: float, ramp: float,
                      point_at: np.ndarray, norm: np.ndarray, pts: np.ndarray,
                      rho_bg: np.ndarray, tau2: float) -> float:
    """The appearance misfit of a piece (box parameters `params`, its faces as piece_faces gives them
    from `params` to `codes`) summed over a window's points.

    Faces of one orientation code are lit alike and fitted one colour; a side's (code >= 0) changes
    linearly from its foot to its top where `shade_sides`. The window: a grid of rows at `ys` and
    columns at `xs` (mm; every `step` from (x0, y0)), whose points in use are numbered in `point_at`
    (grid shape, row by row; -1 where not in use); `norm` (points,
    3) their colours and `pts` (points, 2) their places; `rho_bg` each point's misfit to the print as
    printed. A point's misfit is the cover-weighted sum of its faces' misfits (the largest channel's
    squared difference from the face's colour, capped at `tau2`, over tau2) plus its uncovered share
    times rho_bg; a face's cover of a point is the share of a pixel `ramp` mm wide it covers.
    """
    polys, layer, code = piece_faces(params, nadir, cam_z, crown_share, crown, slot, codes)
    footprint = box_corners(params[:6].copy(), nadir, cam_z)[:4]
    height = params[5]
    h, w = point_at.shape
    n_faces = polys.shape[0]
    # The part of the grid the faces can cover (each face's cover is taken within its own box).
    r0, r1, c0, c1 = h, 0, w, 0
    box = np.zeros((n_faces, 4), np.int64)  # each face's rows and columns, in the grid
    for f in range(n_faces):
        xmin, xmax = polys[f, :, 0].min(), polys[f, :, 0].max()
        ymin, ymax = polys[f, :, 1].min(), polys[f, :, 1].max()
        if not (math.isfinite(xmin) and math.isfinite(xmax) and math.isfinite(ymin) and math.isfinite(ymax)):
            continue  # a fit's parameters gone off to infinity: nothing of it lies in the window
        fc0 = max(math.floor((xmin - ramp - x0) / step), 0)
        fr0 = max(math.floor((ymin - ramp - y0) / step), 0)
        fc1 = min(math.ceil((xmax + ramp - x0) / step) + 1, w)
        fr1 = min(math.ceil((ymax + ramp - y0) / step) + 1, h)
        if fc1 <= fc0 or fr1 <= fr0:
            continue
        box[f, 0], box[f, 1], box[f, 2], box[f, 3] = fr0, fr1, fc0, fc1
        r0, r1, c0, c1 = min(r0, fr0), max(r1, fr1), min(c0, fc0), max(c1, fc1)
    if r1 <= r0:
        return rho_bg.sum()
    bh, bw = r1 - r0, c1 - c0

    # The regions, one per orientation code, in the order they are first laid down: slot insides,
    # the body's faces, tabs', merlons'.
    region_of = np.full(16, -1, np.int64)
    region_code = np.empty(n_faces, np.int64)
    n_regions = 0
    for wanted in (SLOT_INSIDE, BODY, TAB, MERLON):
        for f in range(n_faces):
            if layer[f] == wanted and region_of[code[f] + _CODE_OFFSET] < 0:
                region_of[code[f] + _CODE_OFFSET] = n_regions
                region_code[n_regions] = code[f]
                n_regions += 1
    # The merlons' own maps, by code in the order first seen.
    merlon_of = np.full(16, -1, np.int64)
    n_merlon = 0
    for f in range(n_faces):
        if layer[f] == MERLON and merlon_of[code[f] + _CODE_OFFSET] < 0:
            merlon_of[code[f] + _CODE_OFFSET] = n_merlon
            n_merlon += 1

    # Each region's part of the box (the union of its faces' boxes, from r0, c0), and the merlons' and
    # tabs': nothing outside them is covered, so the passes over the maps below keep to them.
    reg_box = np.empty((n_regions, 4), np.int64)
    for k in range(n_regions):
        reg_box[k, 0], reg_box[k, 1], reg_box[k, 2], reg_box[k, 3] = bh, 0, bw, 0
    merlon_box = np.array([bh, 0, bw, 0])
    tab_box = np.array([bh, 0, bw, 0])
    for f in range(n_faces):
        if box[f, 1] <= box[f, 0] or layer[f] == SLOT_OPENING:
            continue
        _grow(reg_box[region_of[code[f] + _CODE_OFFSET]], box[f], r0, c0)
        if layer[f] == MERLON:
            _grow(merlon_box, box[f], r0, c0)
        elif layer[f] == TAB:
            _grow(tab_box, box[f], r0, c0)

    merlon_rows, merlon_cols = slice(merlon_box[0], merlon_box[1]), slice(merlon_box[2], merlon_box[3])

    weight = np.zeros((n_regions, bh, bw))
    # Each region's columns per row that its faces may cover (from span_lo to span_hi, box columns):
    # the pixels outside them stay 0, so the scan for a region's points below keeps to them.
    span_lo = np.full((n_regions, bh), bw, np.int64)
    span_hi = np.zeros((n_regions, bh), np.int64)
    spans = (region_of, span_lo, span_hi)
    in_front = np.zeros((bh, bw))  # what merlons and slot openings hide of the body
    merlons = np.zeros((n_merlon, bh, bw))
    faces = (polys, layer, code, box, r0, c0, xs, ys, x0, step, ramp)
    if n_merlon > 0:
        _add_layer(merlons, merlon_of, MERLON, faces, in_front, _UNSCALED, spans)
        # Merlons seen over each other share the pixel. (Map by map, pixel by pixel within, so that the
        # compiler vectorises the passes; each pixel's sum is taken in the same order.)
        stacked = _stacked(merlons, merlon_rows, merlon_cols)
        share = np.empty_like(stacked)
        front = in_front[merlon_rows, merlon_cols]
        for r in range(stacked.shape[0]):
            for c in range(stacked.shape[1]):
                seen = min(stacked[r, c], 1.0)
                front[r, c] = seen
                share[r, c] = seen / max(stacked[r, c], 1e-9)
        for k in range(n_merlon):
            part = merlons[k, merlon_rows, merlon_cols]
            for r in range(share.shape[0]):
                for c in range(share.shape[1]):
                    part[r, c] *= share[r, c]
    if np.any(layer == SLOT_OPENING):
        # A side's slot opening is not the side: what shows in it is the slot's inside. (Two sides'
        # openings do not overlap, so one map of them all clips each slot's inside.)
        openings = np.zeros((1, bh, bw))
        no_spans = (np.full(16, -1, np.int64), span_lo, span_hi)  # (the openings are no region's)
        _add_layer(openings, np.zeros(16, np.int64), SLOT_OPENING, faces, in_front, _UNSCALED, no_spans)
        _add_layer(weight, region_of, SLOT_INSIDE, faces, openings[0], _SCALED, spans)
        for r in range(bh):
            for c in range(bw):
                in_front[r, c] = min(in_front[r, c] + openings[0, r, c], 1.0)
    _add_layer(weight, region_of, BODY, faces, 1.0 - in_front, _SCALED, spans)
    if np.any(layer == TAB):
        # A tab's faces are lit as the body's faces turned the same way, where the body does not hide them.
        free = np.empty((bh, bw))  # filled on the tabs' part alone: _add_cover reads it only within their boxes
        rows, cols = slice(tab_box[0], tab_box[1]), slice(tab_box[2], tab_box[3])
        seen = _stacked(weight, rows, cols)
        front, part = in_front[rows, cols], free[rows, cols]
        for r in range(seen.shape[0]):
            for c in range(seen.shape[1]):
                part[r, c] = 1.0 - min(seen[r, c] + front[r, c], 1.0)
        _add_layer(weight, region_of, TAB, faces, free, _SCALED, spans)
    for i in range(16):
        if merlon_of[i] >= 0:
            _add_into(weight[region_of[i], merlon_rows, merlon_cols],
                      merlons[merlon_of[i], merlon_rows, merlon_cols])

    # Each region's colour fitted and its misfit added, point by point in the window's order.
    total = np.zeros((bh, bw))
    covered = np.zeros((bh, bw))
    at_r = np.empty(bh * bw, np.int64)
    at_c = np.empty(bh * bw, np.int64)
    at = np.empty(bh * bw, np.int64)  # their points' indices
    wgt = np.empty(bh * bw)  # and the region's cover of them
    for k in range(n_regions):
        side = region_code[k]
        if shade_sides and side >= 0:
            plane = np.array([footprint[side, 0], footprint[side, 1], footprint[(side + 1) % 4, 0],
                              footprint[(side + 1) % 4, 1], nadir[0], nadir[1], cam_z, height])
        else:
            plane = np.zeros(0)
        m = 0
        cover = weight[k]
        for r in range(reg_box[k, 0], reg_box[k, 1]):
            for c in range(span_lo[k, r], span_hi[k, r]):
                if cover[r, c] != 0.0:
                    i = point_at[r0 + r, c0 + c]
                    if i >= 0:
                        at_r[m], at_c[m], at[m], wgt[m] = r, c, i, cover[r, c]
                        m += 1
        _add_face_misfit(at_r[:m], at_c[:m], at[:m], wgt[:m], norm, pts, plane, tau2, total, covered)

    out = 0.0
    for r in range(h):
        inside = r0 <= r < r1
        for c in range(w):
            i = point_at[r, c]
            if i < 0:
                continue
            if inside and c0 <= c < c1:
                out += total[r - r0, c - c0] + min(max(1.0 - covered[r - r0, c - c0], 0.0), 1.0) * rho_bg[i]
            else:
                out += rho_bg[i]
    return out


@njit(cache=True, nogil=True)
def _stacked(maps: np.ndarray, rows: slice, cols: slice) -> np.ndarray:
    """The maps summed pixel by pixel over rows and columns, in the maps' order."""
    out = np.zeros((max(rows.stop - rows.start, 0), max(cols.stop - cols.start, 0)))
    for k in range(maps.shape[0]):
        _add_into(out, maps[k, rows, cols])
    return out


@njit(cache=True, nogil=True)
def _add_into(into: np.ndarray, part: np.ndarray) -> None:
    """into += part, pixel by pixel (an array expression would compile numba's shape-error formatting)."""
    for r in range(part.shape[0]):
        for c in range(part.shape[1]):
            into[r, c] += part[r, c]


@njit(cache=True, nogil=True)
def _grow(part: np.ndarray, face_box: np.ndarray, r0: int, c0: int) -> None:
    """Grow `part` (rows and columns from r0, c0) to take in `face_box` (rows and columns of the grid)."""
    part[0], part[1] = min(part[0], face_box[0] - r0), max(part[1], face_box[1] - r0)
    part[2], part[3] = min(part[2], face_box[2] - c0), max(part[3], face_box[3] - c0)


@njit(cache=True, nogil=True)
def _add_layer(maps: np.ndarray, map_of: np.ndarray, wanted: int, faces: tuple, scale: np.ndarray,
               scaled: bool, spans: tuple) -> None:
    """Add the cover of each face in layer `wanted` to its map, maps[map_of[its code]] (_add_cover).
    `faces`: (polys, layer, code, box, r0, c0, xs, ys, x0, step, ramp) as appearance_misfit has them;
    `spans`: (the region each code's cover ends up in, -1 for none; the regions' columns per row,
    span_lo and span_hi), widened to take in the columns each face may cover."""
    polys, layer, code, box, r0, c0, xs, ys, x0, step, ramp = faces
    span_of, span_lo, span_hi = spans
    for f in range(polys.shape[0]):
        if layer[f] == wanted:
            _add_cover(maps[map_of[code[f] + _CODE_OFFSET]], polys[f], box[f], r0, c0, xs, ys, x0, step, ramp,
                       scale, scaled, span_of[code[f] + _CODE_OFFSET], span_lo, span_hi)


@njit(cache=True, nogil=True)
def _add_cover(out: np.ndarray, poly: np.ndarray, box: np.ndarray, r0: int, c0: int, xs: np.ndarray,
               ys: np.ndarray, x0: float, step: float, ramp: float, scale: np.ndarray, scaled: bool,
               span: int, span_lo: np.ndarray, span_hi: np.ndarray) -> None:
    """Add the soft cover of the convex quadrilateral `poly` (a face) to `out` (a part of the grid from row r0,
    column c0; columns at `xs`, every `step` from x0), times `scale` (out's shape) where `scaled`, within its rows and columns `box`;
    region `span`'s columns per row (span_lo, span_hi; none where -1) widened to take in those it may cover."""
    if box[1] <= box[0]:
        return
    nx, ny, c = edge_planes(poly)
    for r in range(box[0], box[1]):
        # Only where the polygon, grown by half a pixel, crosses the row does it cover anything (a
        # slanted face's box is mostly empty): a column either side more, for rounding.
        lo, hi = -math.inf, math.inf
        for k in range(nx.shape[0]):
            # Covered at x only while nx x + ny y - c < ramp / 2.
            rest = c[k] + 0.5 * ramp - ny[k] * ys[r]
            if nx[k] > 1e-12:
                hi = min(hi, rest / nx[k])
            elif nx[k] < -1e-12:
                lo = max(lo, rest / nx[k])
            elif rest < -1e-9:
                hi = -math.inf
        lo, hi = max(lo, xs[box[2]] - step), min(hi, xs[box[3] - 1] + step)
        if not hi >= lo:
            continue
        first = max(box[2], math.floor((lo - x0) / step) - 1)
        last = min(box[3], math.ceil((hi - x0) / step) + 2)
        if span >= 0 and last > first:
            span_lo[span, r - r0] = min(span_lo[span, r - r0], first - c0)
            span_hi[span, r - r0] = max(span_hi[span, r - r0], last - c0)
        # cover_at for a face's four edges, with what stays the same along the row (each edge's normal
        # times the row's y) taken out of the loop over its columns: the same sums, operation for
        # operation ((nx x + ny y) - c), which is most of the kernel's gain in session 84.
        y = ys[r]
        nx0, nx1, nx2, nx3 = nx[0], nx[1], nx[2], nx[3]
        ny_y0, ny_y1, ny_y2, ny_y3 = ny[0] * y, ny[1] * y, ny[2] * y, ny[3] * y
        e0, e1, e2, e3 = c[0], c[1], c[2], c[3]
        out_row, scale_row = out[r - r0], scale[r - r0]
        for col in range(first, last):
            x = xs[col]
            sd = nx0 * x + ny_y0 - e0
            v = nx1 * x + ny_y1 - e1
            if v > sd:
                sd = v
            v = nx2 * x + ny_y2 - e2
            if v > sd:
                sd = v
            v = nx3 * x + ny_y3 - e3
            if v > sd:
                sd = v
            v = min(max(0.5 - sd / ramp, 0.0), 1.0)
            out_row[col - c0] += v * scale_row[col - c0] if scaled else v


@njit(cache=True, nogil=True)
def _add_face_misfit(at_r: np.ndarray, at_c: np.ndarray, at: np.ndarray, wgt: np.ndarray, norm: np.ndarray,
                     pts: np.ndarray, side_plane: np.ndarray, tau2: float, total: np.ndarray,
                     covered: np.ndarray) -> None:
    """Add one face's misfit to `total` and its cover to `covered` (both on the grid's part the caller
    works in) at the places (at_r, at_c) of that part it covers, in the window's order: points `at`
    (indices into `norm` and `pts`), covered `wgt` of each.

    `side_plane`: empty for a face of one colour (a top), else (foot corner x, y, next foot corner x,
    y, nadir x, y, cam_z, piece height) of a side whose colour changes linearly with the height at
    which the line of sight meets it (0 at its foot, 1 at its top; merlons and tabs taken as lying in
    their side's plane). The side's colour is then fitted per channel by weighted least squares on
    that height, or as its plain mean where the side shows too little of its height.

    (All the sums over the points in one pass, each in the points' order: the same sums to the bit as
    a pass for each.)"""
    m = at.shape[0]
    shaded = side_plane.shape[0] > 0
    up = np.zeros(m)  # each point's height on a shaded side, as a share of the piece's
    if shaded:
        b0x, b0y, b1x, b1y = side_plane[0], side_plane[1], side_plane[2], side_plane[3]
        nx, ny, cam_z, height = side_plane[4], side_plane[5], side_plane[6], side_plane[7]
        a00, a10, a01, a11 = b0x - nx, b0y - ny, b1x - b0x, b1y - b0y
        det = a00 * a11 - a01 * a10
    sw = s0 = s1 = s2 = 0.0  # the cover, and the colour it weighs, summed
    sv = svv = v0 = v1 = v2 = 0.0  # the height it weighs, squared, and times the colour
    for j in range(m):
        w, i = wgt[j], at[j]
        sw += w
        s0 += w * norm[i, 0]
        s1 += w * norm[i, 1]
        s2 += w * norm[i, 2]
        if shaded:
            if abs(det) < 1e-6:
                u = 0.5
            else:
                # A point at height z over the foot b0 + s (b1 - b0) is seen at nadir + k (foot - nadir),
                # k = cam_z / (cam_z - z): solved for k, then z.
                k = (a11 * (pts[i, 0] - nx) - a01 * (pts[i, 1] - ny)) / det
                u = min(max(cam_z * (1.0 - 1.0 / max(k, 1e-3)) / max(height, 1e-3), 0.0), 1.0)
            up[j] = u
            sv += w * u
            svv += w * u * u
            v0 += w * u * norm[i, 0]
            v1 += w * u * norm[i, 1]
            v2 += w * u * norm[i, 2]
    if sw < 1e-6:
        return
    mean = np.array([s0 / sw, s1 / sw, s2 / sw])
    slope = np.zeros(3)
    if shaded:
        det_ls = sw * svv - sv * sv
        if det_ls < 1e-3 * sw * sw:
            shaded = False  # the side shows too little of its height: its plain mean
        else:
            slope[0] = (sw * v0 - sv * s0) / det_ls
            slope[1] = (sw * v1 - sv * s1) / det_ls
            slope[2] = (sw * v2 - sv * s2) / det_ls
    for j in range(m):
        i = at[j]
        r = 0.0
        for c in range(3):
            mu = mean[c] + (up[j] - sv / sw) * slope[c] if shaded else mean[c]
            r = max(r, abs(norm[i, c] - mu))
        total[at_r[j], at_c[j]] += wgt[j] * min(r * r, tau2) / tau2
        covered[at_r[j], at_c[j]] += wgt[j]
