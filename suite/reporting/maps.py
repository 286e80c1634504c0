"""Where in the output a divergence lies: the difference maps asv cannot keep.

asv benchmark processes export, per commit, the mean |diff| from the ``default`` order over the
output's H x W and per output channel (``suite.core.measurement.tracked_divergence``) beside
``results/`` (``suite.core.runstore``: ``runs/<commit>/maps/<workload>.<dtype>.<target>.<order>.npz``,
verified when the history is loaded). The report draws them: H x W as a heat map (an inline PNG),
channels as bars (inline SVG). A rounding drift covers the whole map evenly; a bug shows as tiles
or channels.
"""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np


def _heat(values: np.ndarray) -> np.ndarray:
    """RGB uint8 of values in [0, 1]: white through yellow and orange to dark red."""
    stops = np.array([[255, 255, 255], [255, 220, 90], [240, 110, 30], [150, 0, 20]], dtype=np.float64)
    position = np.clip(values, 0, 1) * (len(stops) - 1)
    low = np.minimum(position.astype(int), len(stops) - 2)
    frac = (position - low)[..., None]
    return (stops[low] * (1 - frac) + stops[low + 1] * frac).round().astype(np.uint8)


def png_data_uri(image: np.ndarray) -> str:
    """A 2-d array as a heat-map PNG (scaled to its maximum), as a data: URI (PNG layout: RFC 2083)."""
    scale = float(np.max(image)) if image.size and np.max(image) > 0 else 1.0
    rgb = _heat(image / scale)
    height, width = image.shape
    raw = b"".join(b"\x00" + rgb[row].tobytes() for row in range(height))  # filter type 0 per row

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode()


def channel_bars(values: np.ndarray, width: int = 330, height: int = 90) -> dict:
    """Geometry of a bar chart of the per-channel mean |diff| (one path, so thousands of channels
    stay small)."""
    top = float(np.max(values)) if values.size and np.max(values) > 0 else 1.0
    step = width / max(len(values), 1)
    path = "".join(f"M{i * step:.2f},{height}V{height - height * v / top:.2f}" for i, v in enumerate(values)
                   if v > 0)
    return {"width": width, "height": height, "d": path, "max": top, "channels": len(values),
            "stroke": max(step * 0.8, 0.4)}


def figure(found: dict[str, np.ndarray] | None) -> dict | None:
    """What the report draws for one mark's maps, or None without exported maps."""
    if found is None or "channels" not in found:
        return None
    out = {"channels": channel_bars(found["channels"]), "hw": None}
    if "hw" in found:
        hw = found["hw"]
        out["hw"] = {"uri": png_data_uri(hw), "height": hw.shape[0], "width": hw.shape[1],
                     "max": float(np.max(hw)), "mean": float(np.mean(hw))}
    return out
