"""Synthetic phone photos of Castellan castles with ground truth (optional extra: `pip install .[synth]`).

`synth.render.render_photo(castle, seed, width, height, spp)` renders one photo with Mitsuba 3;
`synth.batch.synthesize(count, out_dir)` renders a set. Scoring a photo never imports this package.
"""
