"""The one exception the vision API raises for input that is not a readable photo."""
from __future__ import annotations


class PhotoError(ValueError):
    """The bytes are not a readable photo; the message tells the user what to send instead."""
