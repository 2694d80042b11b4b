#!/usr/bin/python3
"""Writes tests/data/formats/: small WebP, TIFF, GIF, BMP, PNG and JPEG files in the variants vit
decodes, and the pixels Pillow 9.4 gives for each, for tests/test_formats.c. Run by hand from the
project root (Debian 12: python3-pil, python3-numpy); the project itself never runs it.

Files written:
  *.webp *.tif *.gif *.bmp *.png *.jpg   the test images
  pillow.tsv    one row per expectation: file, exif (0: Image.open(f), 1: ImageOps.exif_transpose
                first), width, height, offset; the pixels are Image.convert("RGB") at `offset`
                bytes into pillow.rgb and Image.convert("L") at offset / 3 into pillow.l. Files
                with an exif-1 row are those that exif_transpose changes; for the others turning
                them upright changes nothing.
  refused.tsv   files vit refuses on purpose, with a piece of the expected error message.

Where a Pillow writer cannot make a variant (16-bit RGB, premultiplied alpha, tiles, planes,
min-is-white TIFF; 4-bit, 16-bit and bitfield BMPs; GIF frame placement, local and missing colour
tables; EXIF blocks of unusual shape), the bytes are written here by hand, and Pillow's reading of
them is still the expectation.

TIFF orientation: Pillow 9.4 applies a TIFF's Orientation tag when loading, and its exif_transpose
then applies it a second time (fixed in Pillow 10.1, which drops the tag once applied). The
expectation for exif 1 is the upright image, applied once, as Pillow >= 10.1 gives it.
"""
import io
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image, ImageOps

OUT = "tests/data/formats"
rows = []  # (file, exif, width, height, offset)
blob_rgb = bytearray()
blob_l = bytearray()
refused = []


def pattern(w, h, seed=0):
    """Smooth gradients with hard edges and a little noise, different in each channel."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    r = (x * 255 // max(w - 1, 1)) ^ ((y // 3) * 40)
    g = (y * 255 // max(h - 1, 1) + (x // 4) * 30) % 256
    b = ((x + y) * 11 + rng.integers(0, 24, size=(h, w))) % 256
    return np.stack([r, g, b], axis=-1).astype(np.uint8)


def save(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def expect(name, exif=0, image=None):
    """Records Pillow's pixels of OUT/name (or of `image`, an already transposed Image)."""
    im = image if image is not None else Image.open(os.path.join(OUT, name))
    rgb = np.asarray(im.convert("RGB"))
    lum = np.asarray(im.convert("L"))
    h, w = lum.shape
    rows.append((name, exif, w, h, len(blob_rgb)))
    blob_rgb.extend(rgb.tobytes())
    blob_l.extend(lum.tobytes())
    return rgb


def expect_file(name, data, upright=None):
    """Writes a file, records its raw pixels and, when exif_transpose changes them, those too."""
    save(name, data)
    raw = expect(name)
    path = os.path.join(OUT, name)
    if path.endswith(".tif"):
        turned = Image.open(path)  # Pillow 10.1 semantics: the tag applied once, when loading
    else:
        turned = ImageOps.exif_transpose(Image.open(path))
    t = np.asarray(turned.convert("RGB"))
    if t.shape != raw.shape or (t != raw).any():
        expect(name, 1, turned)
    if upright is not None:
        assert t.shape == upright.shape and (t == upright).all(), name


def pil_bytes(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


# ---- EXIF blocks ----

def exif_block(entries, big=False, ifd_offset=8, extra=b""):
    """A TIFF structure: header, one IFD of (tag, type, count, 4 value bytes), then `extra`."""
    e = ">" if big else "<"
    out = (b"MM\0*" if big else b"II*\0") + struct.pack(e + "I", ifd_offset)
    out += b"\0" * (ifd_offset - 8)
    out += struct.pack(e + "H", len(entries))
    for tag, typ, count, value in entries:
        out += struct.pack(e + "HHI", tag, typ, count) + value
    return out + struct.pack(e + "I", 0) + extra


def short(v, big=False):
    return struct.pack((">" if big else "<") + "HH", v, 0)


def orientation_exif(o):
    return b"Exif\0\0" + exif_block([(274, 3, 1, short(o))])


# Pillow's transpose for each orientation, and the inverse that makes the stored image.
METHOD = {2: Image.Transpose.FLIP_LEFT_RIGHT, 3: Image.Transpose.ROTATE_180,
          4: Image.Transpose.FLIP_TOP_BOTTOM, 5: Image.Transpose.TRANSPOSE,
          6: Image.Transpose.ROTATE_270, 7: Image.Transpose.TRANSVERSE,
          8: Image.Transpose.ROTATE_90}
INVERSE = dict(METHOD)
INVERSE[6], INVERSE[8] = Image.Transpose.ROTATE_90, Image.Transpose.ROTATE_270


def stored_for(upright, o):
    return upright if o == 1 else upright.transpose(INVERSE[o])


# ---- PNG with hand-placed chunks ----

def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_chunks(data):
    pos, out = 8, []
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        out.append((data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]))
        pos += 12 + n
    return out


def png_with_exif(im, exif, after_idat=False, extra=()):
    """A PNG of im with an eXIf chunk (no "Exif\\0\\0" there; None: no eXIf) before or after the
    image data, and extra (kind, body) chunks after it."""
    if exif and exif.startswith(b"Exif\0\0"):
        exif = exif[6:]
    add = ([(b"eXIf", exif)] if exif is not None else []) + list(extra)
    chunks = png_chunks(pil_bytes(im, "PNG"))
    out = b"\x89PNG\r\n\x1a\n"
    for kind, body in chunks:
        if kind == b"IDAT" and not after_idat:
            out += b"".join(png_chunk(k, b) for k, b in add)
            after_idat = None
        if kind == b"IEND" and after_idat:
            out += b"".join(png_chunk(k, b) for k, b in add)
        out += png_chunk(kind, body)
    return out


def raw_profile(exif):
    """ImageMagick's zTXt "Raw profile type exif": a header line, the length, then hex lines."""
    h = exif.hex()
    text = f"\nexif\n{len(exif):8d}\n" + "\n".join(h[i:i + 72] for i in range(0, len(h), 72))
    return (b"zTXt", b"Raw profile type exif\0\0" + zlib.compress(text.encode()))


def xmp(body, compressed=False):
    text = ('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description ' + body +
            '</rdf:Description></rdf:RDF></x:xmpmeta>').encode()
    data = zlib.compress(text) if compressed else text
    return (b"iTXt", b"XML:com.adobe.xmp\0" + bytes([int(compressed), 0]) + b"\0\0" + data)


# ---- TIFF by hand ----

def tiff(width, height, planes, *, bits, photometric, big=False, extra=None, colormap=None,
         planar=1, tile=None, orientation=None, fillorder=None, sampleformat=None, rps=5,
         spp=None):
    """An uncompressed TIFF. planes: one bytes object per plane (or one for contiguous data),
    each height rows of packed samples in file byte order, rows byte-aligned."""
    e = ">" if big else "<"
    spp = spp or (len(planes) if planar == 2 else (
        (3 if photometric in (2, 6) else 1) + (len(extra) if extra else 0)))
    row = (width * bits * (1 if planar == 2 else spp) + 7) // 8
    chunks = []  # the strips or tiles, in file order
    if tile:
        tw, th = tile
        trow = (tw * bits * (1 if planar == 2 else spp) + 7) // 8
        for plane in planes:
            for ty in range(0, height, th):
                for tx in range(0, width, tw):
                    data = b""
                    for r in range(th):
                        y = ty + r
                        line = plane[y * row:(y + 1) * row] if y < height else b""
                        x0 = tx * bits * (1 if planar == 2 else spp) // 8
                        part = line[x0:x0 + trow]
                        data += part + b"\0" * (trow - len(part))
                    chunks.append(data)
    else:
        for plane in planes:
            for y in range(0, height, rps):
                chunks.append(plane[y * row:min(y + rps, height) * row])
    entries = [(256, 4, [width]), (257, 4, [height]), (258, 3, [bits] * spp), (259, 3, [1])]
    if photometric is not None:  # None: no Photometric tag at all
        entries.append((262, 3, [photometric]))
    if fillorder:
        entries.append((266, 3, [fillorder]))
    if not tile:
        entries.append((273, 4, [0] * len(chunks)))  # offsets patched below
    if orientation:
        entries.append((274, 3, [orientation]))
    entries.append((277, 3, [spp]))
    if not tile:
        entries += [(278, 4, [rps]), (279, 4, [len(c) for c in chunks])]
    entries.append((284, 3, [planar]))
    if colormap is not None:
        entries.append((320, 3, list(colormap)))
    if tile:
        entries += [(322, 3, [tile[0]]), (323, 3, [tile[1]]), (324, 4, [0] * len(chunks)),
                    (325, 4, [len(c) for c in chunks])]
    if extra:
        entries.append((338, 3, list(extra)))
    if sampleformat:
        entries.append((339, 3, [sampleformat] * spp))
    entries.sort()
    size = {3: 2, 4: 4}
    ifd_size = 2 + 12 * len(entries) + 4
    overflow_at = 8 + ifd_size
    overflow = sum(len(v) * size[t] for _, t, v in entries if len(v) * size[t] > 4)
    data_at = overflow_at + overflow
    offsets = []
    for c in chunks:
        offsets.append(data_at)
        data_at += len(c)
    out_ifd, out_over = struct.pack(e + "H", len(entries)), b""
    for tag, typ, vals in entries:
        if tag in (273, 324):
            vals = offsets
        packed = b"".join(struct.pack(e + ("H" if typ == 3 else "I"), v) for v in vals)
        if len(packed) <= 4:
            out_ifd += struct.pack(e + "HHI", tag, typ, len(vals)) + packed.ljust(4, b"\0")
        else:
            out_ifd += struct.pack(e + "HHII", tag, typ, len(vals), overflow_at + len(out_over))
            out_over += packed
    head = (b"MM\0*" if big else b"II*\0") + struct.pack(e + "I", 8)
    return head + out_ifd + struct.pack(e + "I", 0) + out_over + b"".join(chunks)


def pack_bits(values, bits):
    """Rows of small integers packed MSB first, each row byte-aligned."""
    out = b""
    for line in values:
        acc, n = 0, 0
        row = bytearray()
        for v in line:
            acc = acc << bits | int(v)
            n += bits
            if n == 8:
                row.append(acc)
                acc, n = 0, 0
        if n:
            row.append(acc << (8 - n))
        out += bytes(row)
    return out


# ---- BMP by hand ----

def bmp(width, height, bits, rows_bytes, *, palette=None, header=40, compression=0, masks=None,
        top_down=False, colors=0, pal_entry=4):
    """rows_bytes: height rows of packed pixels, top row first; padded and ordered here."""
    stride = ((width * bits + 31) >> 3) & ~3
    ordered = rows_bytes if top_down else list(reversed(rows_bytes))
    data = b"".join(r + b"\0" * (stride - len(r)) for r in ordered)
    pal = b""
    if palette is not None:
        pal = b"".join(bytes((b, g, r)) + (b"\0" if pal_entry == 4 else b"") for r, g, b in palette)
    if header == 12:
        dib = struct.pack("<IHHHH", 12, width, height, 1, bits)
    else:
        dib = struct.pack("<IiiHHIIiiII", header, width, -height if top_down else height, 1, bits,
                          compression, len(data), 2835, 2835, colors, 0)
        if header > 40:
            m = list(masks or (0, 0, 0, 0)) + [0] * 4
            dib += struct.pack("<IIII", *m[:4]) + b"\0" * (header - 56)
    after = b""
    if header == 40 and compression == 3:
        after = struct.pack("<III", *masks[:3])
    off = 14 + len(dib) + len(after) + len(pal)
    return struct.pack("<2sIHHI", b"BM", off + len(data), 0, 0, off) + dib + after + pal + data


# ---- GIF surgery ----

def gif_parse(data):
    """[('head', bytes), ('gct', bytes), ('ext', bytes), ('img', desc, lct, lzw), ...]"""
    out = [("head", data[:13])]
    flags = data[10]
    pos = 13
    if flags & 0x80:
        n = 3 << ((flags & 7) + 1)
        out.append(("gct", data[pos:pos + n]))
        pos += n

    def sub_blocks(pos):
        start = pos
        while data[pos]:
            pos += data[pos] + 1
        return data[start:pos + 1], pos + 1

    while pos < len(data):
        c = data[pos:pos + 1]
        if c == b"!":
            body, end = sub_blocks(pos + 2)
            out.append(("ext", data[pos:pos + 2] + body))
            pos = end
        elif c == b",":
            desc = data[pos:pos + 10]
            pos += 10
            lct = b""
            if desc[9] & 0x80:
                n = 3 << ((desc[9] & 7) + 1)
                lct = data[pos:pos + n]
                pos += n
            body, end = sub_blocks(pos + 1)
            out.append(("img", desc, lct, data[pos:pos + 1] + body))
            pos = end
        else:
            out.append(("trailer", data[pos:]))
            break
    return out


def gif_join(parts):
    out = b""
    for p in parts:
        if p[0] == "img":
            out += p[1] + p[2] + p[3]
        else:
            out += p[1]
    return out


def gif_set_screen(parts, w, h, keep_gct=True):
    parts = list(parts)
    head = bytearray(parts[0][1])
    head[6:10] = struct.pack("<HH", w, h)
    if not keep_gct:
        head[10] &= 0x7F
        parts = [p for p in parts if p[0] != "gct"]
    parts[0] = ("head", bytes(head))
    return parts


def gif_place_frame(parts, x, y, w=None, h=None):
    out = []
    for p in parts:
        if p[0] == "img":
            d = bytearray(p[1])
            d[1:5] = struct.pack("<HH", x, y)
            if w is not None:
                d[5:9] = struct.pack("<HH", w, h)
            p = ("img", bytes(d), p[2], p[3])
        out.append(p)
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    a = pattern(23, 17)
    im = Image.fromarray(a)
    rgba = np.dstack([a, ((np.indices((17, 23)).sum(0) * 37) % 256).astype(np.uint8)])
    rgba[0, :5, 3] = 0  # some fully transparent pixels, some opaque
    rgba[1, :5, 3] = 255
    im_rgba = Image.fromarray(rgba, "RGBA")
    im_p = im.quantize(colors=37, dither=Image.Dither.NONE)
    im_l = im.convert("L")

    # WebP: lossy, lossless, alpha, animation (first frame), odd sizes, EXIF
    expect_file("webp_lossy.webp", pil_bytes(im, "WEBP", quality=80))
    expect_file("webp_lossless.webp", pil_bytes(im, "WEBP", lossless=True))
    expect_file("webp_lossy_alpha.webp", pil_bytes(im_rgba, "WEBP", quality=70))
    expect_file("webp_lossless_alpha.webp", pil_bytes(im_rgba, "WEBP", lossless=True, exact=True))
    expect_file("webp_1x1.webp", pil_bytes(Image.new("RGB", (1, 1), (200, 30, 90)), "WEBP"))
    expect_file("webp_33x7.webp", pil_bytes(Image.fromarray(pattern(33, 7, 1)), "WEBP"))
    second = Image.fromarray(pattern(23, 17, 2))
    expect_file("webp_animated.webp", pil_bytes(im, "WEBP", save_all=True,
                                                append_images=[second], duration=100, lossless=True))
    expect_file("webp_exif6.webp", pil_bytes(stored_for(im, 6), "WEBP", lossless=True,
                                             exif=orientation_exif(6)), upright=a)

    # TIFF through Pillow's writers (and libtiff's compressions)
    expect_file("tiff_rgb8.tif", pil_bytes(im, "TIFF"))
    expect_file("tiff_rgb8_lzw.tif", pil_bytes(im, "TIFF", compression="tiff_lzw"))
    expect_file("tiff_rgb8_deflate.tif", pil_bytes(im, "TIFF", compression="tiff_adobe_deflate"))
    expect_file("tiff_rgb8_jpeg.tif", pil_bytes(im, "TIFF", compression="jpeg"))
    expect_file("tiff_ycbcr_jpeg.tif", pil_bytes(im.convert("YCbCr"), "TIFF", compression="jpeg"))
    expect_file("tiff_ycbcr_lzw.tif", pil_bytes(im.convert("YCbCr"), "TIFF", compression="tiff_lzw"))
    expect_file("tiff_ycbcr_deflate_orient4.tif",
                pil_bytes(im.convert("YCbCr"), "TIFF", compression="tiff_adobe_deflate",
                          tiffinfo={274: 4}))
    expect_file("tiff_rgba8.tif", pil_bytes(im_rgba, "TIFF"))
    expect_file("tiff_grey8.tif", pil_bytes(im_l, "TIFF"))
    expect_file("tiff_grey8_packbits.tif", pil_bytes(im_l, "TIFF", compression="packbits"))
    expect_file("tiff_bilevel_g4.tif", pil_bytes(im_l.point(lambda v: 255 * (v > 120)).convert("1"),
                                                 "TIFF", compression="group4"))
    expect_file("tiff_palette8.tif", pil_bytes(im_p, "TIFF"))
    i16 = (np.indices((17, 23)).sum(0) * 13).astype(np.uint16)  # values below and above 255
    expect_file("tiff_grey16.tif", pil_bytes(Image.fromarray(i16, "I;16"), "TIFF"))
    expect_file("tiff_orient6.tif", pil_bytes(stored_for(im, 6), "TIFF", tiffinfo={274: 6}),
                upright=a)
    expect_file("tiff_orient3_lzw.tif", pil_bytes(stored_for(im, 3), "TIFF", tiffinfo={274: 3},
                                                  compression="tiff_lzw"), upright=a)

    # TIFF by hand: 16 bits, premultiplied alpha, min-is-white, low depths, tiles, planes
    w, h = 23, 17
    a16 = (a.astype(np.uint16) * 257 + np.indices((h, w)).sum(0)[..., None].astype(np.uint16))
    expect_file("tiff_rgb16_le.tif", tiff(w, h, [a16.astype("<u2").tobytes()], bits=16,
                                          photometric=2))
    expect_file("tiff_rgb16_be.tif", tiff(w, h, [a16.astype(">u2").tobytes()], bits=16,
                                          photometric=2, big=True))
    alpha = rgba[..., 3:].astype(np.uint16)
    premul = np.dstack([(a.astype(np.uint16) * alpha // 255), alpha]).astype(np.uint8)
    expect_file("tiff_rgba8_premultiplied.tif", tiff(w, h, [premul.tobytes()], bits=8,
                                                     photometric=2, extra=[1]))
    p16 = np.dstack([a16, alpha * 257 + 3]).astype(np.uint32)
    p16[..., :3] = p16[..., :3] * p16[..., 3:] // 65535
    expect_file("tiff_rgba16_premultiplied_be.tif",
                tiff(w, h, [p16.astype(">u2").tobytes()], bits=16, photometric=2, extra=[1],
                     big=True))
    expect_file("tiff_rgbx8.tif", tiff(w, h, [rgba.tobytes()], bits=8, photometric=2, extra=[0]))
    expect_file("tiff_rgb8_4_samples.tif", tiff(w, h, [rgba.tobytes()], bits=8, photometric=2,
                                                spp=4))  # no ExtraSamples tag
    five = np.dstack([rgba, a[..., :1]])
    expect_file("tiff_rgbax8.tif", tiff(w, h, [five.tobytes()], bits=8, photometric=2,
                                        extra=[2, 0]))
    lum = np.asarray(im_l)
    expect_file("tiff_miniswhite8.tif", tiff(w, h, [lum.tobytes()], bits=8, photometric=0))
    expect_file("tiff_grey4.tif", tiff(w, h, [pack_bits(lum >> 4, 4)], bits=4, photometric=1))
    expect_file("tiff_grey2_miniswhite.tif", tiff(w, h, [pack_bits(lum >> 6, 2)], bits=2,
                                                  photometric=0))
    expect_file("tiff_grey1_lsb2msb.tif", tiff(w, h, [bytes(
        int(f"{b:08b}"[::-1], 2) for b in pack_bits(lum >> 7, 1))], bits=1, photometric=1,
        fillorder=2))
    cmap4 = [(i * 4369) % 65536 for i in range(16)] + [65535 - i * 3000 for i in range(16)] + \
            [(i * 20000) % 65536 for i in range(16)]
    expect_file("tiff_palette4.tif", tiff(w, h, [pack_bits(lum >> 4, 4)], bits=4, photometric=3,
                                          colormap=cmap4))
    expect_file("tiff_no_photometric.tif", tiff(w, h, [lum.tobytes()], bits=8, photometric=None))
    expect_file("tiff_grey16_be.tif", tiff(w, h, [i16.astype(">u2").tobytes()], bits=16,
                                           photometric=1, big=True))
    la = np.dstack([lum, rgba[..., 3]])
    expect_file("tiff_la8.tif", tiff(w, h, [la.tobytes()], bits=8, photometric=1, extra=[2]))
    expect_file("tiff_planar_rgb8.tif", tiff(w, h, [a[..., c].tobytes() for c in range(3)],
                                             bits=8, photometric=2, planar=2))
    expect_file("tiff_planar_rgba8.tif", tiff(w, h, [rgba[..., c].tobytes() for c in range(4)],
                                              bits=8, photometric=2, planar=2, extra=[2]))
    expect_file("tiff_tiled_rgb8.tif", tiff(w, h, [a.tobytes()], bits=8, photometric=2,
                                            tile=(16, 16)))
    expect_file("tiff_tiled_grey16_be.tif", tiff(w, h, [i16.astype(">u2").tobytes()], bits=16,
                                                 photometric=1, big=True, tile=(16, 16)))
    expect_file("tiff_orient8_be.tif", tiff(17, 23, [np.asarray(stored_for(im, 8)).tobytes()],
                                            bits=8, photometric=2, big=True, orientation=8),
                upright=a)
    # refused on purpose
    save("tiff_cmyk.tif", pil_bytes(im.convert("CMYK"), "TIFF"))
    refused.append(("tiff_cmyk.tif", "CMYK TIFF is not supported"))
    save("tiff_float.tif", pil_bytes(Image.fromarray(lum.astype(np.float32), "F"), "TIFF"))
    refused.append(("tiff_float.tif", "floating-point"))
    save("tiff_ycbcr_raw.tif", tiff(w, h, [np.asarray(im.convert("YCbCr")).tobytes()], bits=8,
                                    photometric=6))
    refused.append(("tiff_ycbcr_raw.tif", "uncompressed YCbCr"))

    # GIF: palette (interlaced from 16 rows up), transparency, frame placement, colour tables
    expect_file("gif_palette.gif", pil_bytes(im_p, "GIF"))
    expect_file("gif_9x7.gif", pil_bytes(Image.fromarray(pattern(9, 7, 3)).quantize(16), "GIF"))
    expect_file("gif_grey.gif", pil_bytes(im_l, "GIF"))
    expect_file("gif_1x1.gif", pil_bytes(Image.new("P", (1, 1), 3), "GIF"))
    transparent = pil_bytes(im_p, "GIF", transparency=5)
    expect_file("gif_transparent.gif", transparent)
    parts = gif_parse(transparent)
    expect_file("gif_offset_transparent.gif",
                gif_join(gif_place_frame(gif_set_screen(parts, 30, 21), 4, 3)))
    plain = gif_parse(pil_bytes(im_p, "GIF"))
    expect_file("gif_offset.gif", gif_join(gif_place_frame(gif_set_screen(plain, 30, 21), 5, 2)))
    expect_file("gif_beyond_screen.gif",
                gif_join(gif_place_frame(gif_set_screen(plain, 10, 8), 6, 4)))
    # the global colour table moved into the frame as a local one, and none at all
    gct = [p for p in plain if p[0] == "gct"][0][1]
    head = [p for p in plain if p[0] == "head"][0][1]
    local = []
    for p in gif_set_screen(plain, 23, 17, keep_gct=False):
        if p[0] == "img":
            d = bytearray(p[1])
            d[9] |= 0x80 | (head[10] & 7)
            p = ("img", bytes(d), gct, p[3])
        local.append(p)
    expect_file("gif_local_table.gif", gif_join(local))
    expect_file("gif_no_table.gif", gif_join(gif_set_screen(plain, 23, 17, keep_gct=False)))
    # LZW data that ends early (a 23x9 frame's data in a 23x17 frame): Pillow refuses it
    early = gif_parse(pil_bytes(Image.fromarray(pattern(23, 9, 4)).quantize(16), "GIF"))
    save("gif_short_data.gif",
         gif_join(gif_place_frame(gif_set_screen(early, 23, 17), 0, 0, 23, 17)))
    refused.append(("gif_short_data.gif", "the image data ends before the image does"))
    expect_file("gif_animated.gif", pil_bytes(im_p, "GIF", save_all=True,
                                              append_images=[second.quantize(16)], duration=50))

    # BMP: Pillow's writers, then by hand
    expect_file("bmp_rgb24.bmp", pil_bytes(im, "BMP"))
    expect_file("bmp_pal8.bmp", pil_bytes(im_p, "BMP"))
    expect_file("bmp_grey8.bmp", pil_bytes(im_l, "BMP"))
    expect_file("bmp_bilevel.bmp", pil_bytes(im_l.convert("1"), "BMP"))
    expect_file("bmp_rgba32.bmp", pil_bytes(im_rgba, "BMP"))
    idx4 = (lum >> 4)
    pal16 = [(i * 16, 255 - i * 9, (i * 77) % 256) for i in range(16)]
    expect_file("bmp_pal4.bmp", bmp(w, h, 4, [pack_bits([r], 4) for r in idx4], palette=pal16))
    expect_file("bmp_pal4_5colours.bmp",
                bmp(w, h, 4, [pack_bits([r], 4) for r in idx4], palette=pal16[:5], colors=5))
    expect_file("bmp_pal1_colour.bmp", bmp(w, h, 1, [pack_bits([r], 1) for r in (lum >> 7)],
                                           palette=[(200, 10, 10), (10, 10, 200)]))
    v555 = ((a[..., 0] >> 3).astype(np.uint16) << 10) | ((a[..., 1] >> 3).astype(np.uint16) << 5) \
        | (a[..., 2] >> 3) | 0x8000
    expect_file("bmp_rgb555.bmp", bmp(w, h, 16, [r.astype("<u2").tobytes() for r in v555]))
    v565 = ((a[..., 0] >> 3).astype(np.uint16) << 11) | ((a[..., 1] >> 2).astype(np.uint16) << 5) \
        | (a[..., 2] >> 3)
    expect_file("bmp_rgb565_bitfields.bmp", bmp(w, h, 16, [r.astype("<u2").tobytes() for r in v565],
                                                compression=3, masks=(0xF800, 0x7E0, 0x1F)))
    bgra = rgba[..., [2, 1, 0, 3]]
    expect_file("bmp_bgra32_v5.bmp", bmp(w, h, 32, [r.tobytes() for r in bgra], header=124,
                                         compression=3,
                                         masks=(0xFF0000, 0xFF00, 0xFF, 0xFF000000)))
    expect_file("bmp_xbgr32_v4.bmp", bmp(w, h, 32, [r.tobytes() for r in rgba[..., [3, 2, 1, 0]]],
                                         header=108, compression=3,
                                         masks=(0xFF000000, 0xFF0000, 0xFF00, 0)))
    expect_file("bmp_rgba32_bitfields.bmp", bmp(w, h, 32, [r.tobytes() for r in rgba], header=124,
                                                compression=3,
                                                masks=(0xFF, 0xFF00, 0xFF0000, 0xFF000000)))
    expect_file("bmp_topdown24.bmp", bmp(w, h, 24, [r[:, ::-1].tobytes() for r in a],
                                         top_down=True))
    expect_file("bmp_core24.bmp", bmp(w, h, 24, [r[:, ::-1].tobytes() for r in a], header=12))
    pal8 = [tuple(int(v) for v in c) for c in np.asarray(im_p.getpalette()[:37 * 3]).reshape(-1, 3)]
    expect_file("bmp_core8.bmp", bmp(w, h, 8, [r.tobytes() for r in np.asarray(im_p)],
                                     palette=pal8, header=12, pal_entry=3))
    expect_file("bmp_31x3.bmp", pil_bytes(Image.fromarray(pattern(31, 3, 5)), "BMP"))
    rle = bytes([3, 7, 0, 0, 2, 9, 0, 1])  # 3 pixels of 7, end of line, 2 of 9, end of bitmap
    save("bmp_rle8.bmp", bmp(5, 2, 8, [b"", b""], palette=pal16, compression=1)[:-8] + rle)
    refused.append(("bmp_rle8.bmp", "RLE-compressed BMP is not supported"))

    # EXIF orientation: every orientation in PNG (pixel-exact) and JPEG (classified)
    up = Image.fromarray(pattern(7, 5, 6))
    for o in range(1, 9):
        expect_file(f"orient_{o}.png", png_with_exif(stored_for(up, o), orientation_exif(o)),
                    upright=np.asarray(up))
    expect_file("orient_6_after_idat.png",
                png_with_exif(stored_for(up, 6), orientation_exif(6), after_idat=True),
                upright=np.asarray(up))
    # where else Pillow finds the orientation of a PNG: ImageMagick's raw profile, then XMP
    expect_file("png_raw_profile_6.png", png_with_exif(stored_for(up, 6), None,
                                                        extra=[raw_profile(orientation_exif(6))]),
                upright=np.asarray(up))
    expect_file("png_xmp_8.png", png_with_exif(
        stored_for(up, 8), None, extra=[xmp('><tiff:Orientation>8</tiff:Orientation>')]),
        upright=np.asarray(up))
    expect_file("png_xmp_attribute_3_compressed.png", png_with_exif(
        stored_for(up, 3), None, after_idat=True,
        extra=[xmp('tiff:Orientation="3">', compressed=True)]), upright=np.asarray(up))
    no_tag = exif_block([(305, 2, 4, b"vit\0")])
    expect_file("png_exif_without_tag_xmp_6.png", png_with_exif(
        stored_for(up, 6), no_tag, extra=[xmp('tiff:Orientation="6">')]), upright=np.asarray(up))
    expect_file("png_exif_1_xmp_6.png", png_with_exif(
        stored_for(up, 6), orientation_exif(1), extra=[xmp('tiff:Orientation="6">')]))
    pullover = Image.open("tests/data/pullover.png").convert("L")
    for o in range(1, 9):
        expect_file(f"orient_{o}.jpg", pil_bytes(stored_for(pullover, o), "JPEG", quality=95,
                                                 exif=orientation_exif(o)))
    # EXIF blocks of unusual shape, read as Pillow reads them
    big = b"Exif\0\0" + exif_block([(274, 3, 1, short(6, True))], big=True)
    long8 = exif_block([(274, 4, 1, struct.pack("<I", 8))])
    count2 = exif_block([(274, 3, 2, struct.pack("<HH", 5, 1))])
    byte6 = exif_block([(274, 1, 1, bytes([6, 0, 0, 0]))])
    dup = exif_block([(274, 3, 1, short(3)), (274, 3, 1, short(6))])
    bad_before = exif_block([(270, 2, 40, struct.pack("<I", 4000)), (274, 3, 1, short(6))])
    bad_after = exif_block([(274, 3, 1, short(6)), (305, 2, 40, struct.pack("<I", 4000))])
    rational = exif_block([(274, 5, 1, struct.pack("<I", 26))], extra=struct.pack("<II", 12, 4))
    for name, block, o in (("exif_big_endian", big, 6), ("exif_long", long8, 8),
                           ("exif_count2", count2, 5), ("exif_byte", byte6, 6),
                           ("exif_duplicate", dup, 6), ("exif_bad_offset_before", bad_before, 6),
                           ("exif_bad_offset_after", bad_after, 6),
                           ("exif_rational", rational, 3)):
        expect_file(name + ".png", png_with_exif(stored_for(up, o), block))

    with open(os.path.join(OUT, "pillow.tsv"), "w") as f:
        f.write("# file\texif\twidth\theight\toffset (tools/gen_format_tests.py)\n")
        for r in rows:
            f.write("\t".join(str(v) for v in r) + "\n")
    with open(os.path.join(OUT, "refused.tsv"), "w") as f:
        f.write("# file\tpart of the error message (tools/gen_format_tests.py)\n")
        for r in refused:
            f.write("\t".join(r) + "\n")
    save("pillow.rgb", bytes(blob_rgb))
    save("pillow.l", bytes(blob_l))
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print(f"{OUT}: {len(os.listdir(OUT))} files, {total} bytes, {len(rows)} expectations")


if __name__ == "__main__":
    sys.exit(main())
