"""Writes PDFs crafted to break a reader into the folder given (issue 30), one file a way:

- deep.pdf: the issue's reproduction, a content stream nesting `<< /A ` 100,000 deep;
- bomb.pdf: a 1.5 MB content stream that inflates to 1.5 GiB of spaces;
- objstm_bomb.pdf: an object stream that inflates to 256 MiB (lopdf inflates these as it
  loads);
- dup_offsets.pdf: one 512 KiB object listed 2,000 times in the cross-reference table;
- deep_plain.pdf: an object outside any stream nesting 100,000 deep;
- pages_count.pdf: a page tree whose /Count says 10^11 pages;
- tounicode_range.pdf: a font whose ToUnicode map spans 2^24 codes;
- deep_cmap.pdf: a ToUnicode map nesting 100,000 dictionaries.

Usage: python3 hostile_pdfs.py OUT_DIR
"""

import os
import sys
import zlib


def pdf(objects, repeat_last=0):
    """A PDF of `objects` (object 1 the catalog); the last one listed `repeat_last` more
    times in the cross-reference table, under numbers of its own."""
    out = bytearray(b"%PDF-1.5\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    offsets += [offsets[-1]] * repeat_last
    size = len(offsets) + 1
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def stream(dictionary, data):
    return b"<< %s /Length %d >>\nstream\n" % (dictionary, len(data)) + data + b"\nendstream"


def inflating_to(total, prefix=b""):
    """zlib data of `prefix` then spaces, `total` bytes in all, compressed in parts."""
    c = zlib.compressobj(9)
    parts = [c.compress(prefix)]
    chunk = b" " * (16 << 20)
    done = len(prefix)
    while done < total:
        parts.append(c.compress(chunk[: min(len(chunk), total - done)]))
        done += len(chunk)
    parts.append(c.flush())
    return b"".join(parts)


CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
PAGES = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"
PAGE = (
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
    b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"
)
FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
TYPE0 = b"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode 6 0 R >>"
HELLO = stream(b"", b"BT /F1 12 Tf 72 720 Td (hello) Tj ET")
DEEP = 100_000


def main(out):
    os.makedirs(out, exist_ok=True)

    def write(name, data):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)

    body = b"BT /F1 12 Tf 72 720 Td (x) Tj ET " + b"<< /A " * DEEP + b"1" + b" >>" * DEEP
    write("deep.pdf", pdf([CATALOG, PAGES, PAGE, FONT,
                           stream(b"/Filter /FlateDecode", zlib.compress(body, 9))]))
    bomb = inflating_to(1536 << 20, b"BT /F1 12 Tf 72 720 Td (bomb) Tj ET\n")
    write("bomb.pdf", pdf([CATALOG, PAGES, PAGE, FONT,
                           stream(b"/Filter /FlateDecode", bomb)]))
    objstm = inflating_to(256 << 20, b"7 0 ")
    write("objstm_bomb.pdf", pdf([CATALOG, PAGES, PAGE, FONT, HELLO,
                                  stream(b"/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode",
                                         objstm)]))

    # One big object, listed many times over.
    big = b"<< /Length %d >>\nstream\n" % (512 << 10) + b" " * (512 << 10) + b"\nendstream"
    write("dup_offsets.pdf", pdf([CATALOG, PAGES,
                                  b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                                  b"/Contents 4 0 R >>", big], repeat_last=2000))

    write("deep_plain.pdf", pdf([CATALOG, PAGES, PAGE, FONT, HELLO,
                                 b"<< /A " * DEEP + b"1" + b" >>" * DEEP]))
    write("pages_count.pdf", pdf([CATALOG,
                                  b"<< /Type /Pages /Kids [3 0 R 6 0 R] /Count 2 >>",
                                  PAGE, FONT, HELLO,
                                  b"<< /Type /Pages /Parent 2 0 R /Kids [] /Count 100000000000 >>"]))
    cmap = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n"
            b"1 begincodespacerange\n<000000> <FFFFFF>\nendcodespacerange\n"
            b"1 beginbfrange\n<000000> <FFFFFF> <0041>\nendbfrange\nendcmap\n")
    write("tounicode_range.pdf", pdf([CATALOG, PAGES, PAGE, TYPE0, HELLO, stream(b"", cmap)]))
    deep_map = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CIDSystemInfo "
                + b"<< /A " * DEEP + b"1" + b" >>" * DEEP
                + b" def\n1 begincodespacerange\n<00> <FF>\nendcodespacerange\nendcmap\n")
    write("deep_cmap.pdf", pdf([CATALOG, PAGES, PAGE, TYPE0, HELLO,
                                stream(b"/Filter /FlateDecode", zlib.compress(deep_map, 9))]))


if __name__ == "__main__":
    main(sys.argv[1])
