"""`saturn opt --html` rendered in a real browser (Debian's chromium,
headless): the page loads, draws both graphs and the growth plot, and its
screenshot is not blank."""

import os
import shutil
import struct
import subprocess
import zlib

import pytest

SATURN = os.environ.get("SATURN_BIN", "")


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG,
    unfiltered (PNG's five filter types)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


@pytest.mark.skipif(not browser(), reason="no chromium (tools/setup.sh installs it)")
def test_page_renders_in_headless_chromium(root, tmp_path):
    assert SATURN, "SATURN_BIN is not set (ctest sets it)"
    page = tmp_path / "report.html"
    model = os.path.join(root, "docs", "examples", "models", "resnet_small.onnx")
    r = subprocess.run([SATURN, "opt", model, "--html", str(page), "-q", "--no-calibration"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    args = [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--user-data-dir=" + str(tmp_path / "profile"), "--window-size=1280,1600"]
    dom = subprocess.run(args + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert html.count("<svg") == 3  # the two graphs and the growth plot
    assert html.count('class="node"') >= 9 + 22  # every node of both graphs drawn
    assert "dnnl.conv_relu" in html
    assert html.count('class="explain"') == 22  # every node of the model as written, explained
    assert "NOT replayed" not in html
    shot = tmp_path / "page.png"
    s = subprocess.run(args + ["--screenshot=" + str(shot), page.as_uri()], capture_output=True, text=True,
                       timeout=120)
    assert s.returncode == 0 and shot.exists(), s.stderr[-2000:]
    width, height, channels, rows = png_pixels(str(shot))
    assert (width, height) == (1280, 1600)
    colors, inked = set(), 0
    for row in rows[::4]:
        for x in range(0, width * channels, channels * 4):
            px = row[x:x + 3]
            colors.add(px)
            inked += px != b"\xff\xff\xff"
    samples = (height // 4) * (width // 4)
    assert len(colors) > 20  # text, boxes, the plot's two colors, the highlight
    assert inked > samples * 0.03  # not a blank page
    assert b"\xff\xd9\x66" in colors  # the changed nodes' fill
