"""Real .odt and .epub files built in memory (zipfile, no binary fixtures): the parts LibreOffice and
e-book tools write, with whatever a test puts in them."""

from __future__ import annotations

import io
import zipfile

ODT_NAMESPACES = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:xlink="http://www.w3.org/1999/xlink"'
)
ODT_MIMETYPE = "application/vnd.oasis.opendocument.text"
MANIFEST = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3">'
    '<manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/>'
    '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml">{encryption}'
    "</manifest:file-entry></manifest:manifest>"
)
ENCRYPTION_DATA = (
    '<manifest:encryption-data manifest:checksum-type="SHA1/1K" manifest:checksum="AAAA">'
    '<manifest:algorithm manifest:algorithm-name="Blowfish CFB" manifest:initialisation-vector="AAAA"/>'
    '<manifest:key-derivation manifest:key-derivation-name="PBKDF2" manifest:iteration-count="1024" '
    'manifest:salt="AAAA"/></manifest:encryption-data>'
)


def zipped(parts: dict[str, bytes | str], *, mimetype: str | None = None) -> bytes:
    """A zip of `parts`, its 'mimetype' entry first and stored, as OpenDocument and EPUB require."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        if mimetype is not None:
            archive.writestr("mimetype", mimetype, compress_type=zipfile.ZIP_STORED)
        for path, data in parts.items():
            archive.writestr(path, data)
    return buffer.getvalue()


def odt_content(body: str, automatic_styles: str = "", prolog: str = "") -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n{prolog}<office:document-content {ODT_NAMESPACES} office:version="1.3">'
        f"<office:automatic-styles>{automatic_styles}</office:automatic-styles>"
        f"<office:body><office:text>{body}</office:text></office:body></office:document-content>"
    )


def odt_file(body: str, *, automatic_styles: str = "", styles: str = "", encrypted: bool = False,
             prolog: str = "", extra: dict[str, bytes | str] | None = None) -> bytes:
    """An .odt whose body (office:text) is `body`, with its manifest, styles.xml and mimetype."""
    parts: dict[str, bytes | str] = {
        "content.xml": odt_content(body, automatic_styles, prolog),
        "styles.xml": f"<office:document-styles {ODT_NAMESPACES}><office:styles>{styles}</office:styles></office:document-styles>",
        "META-INF/manifest.xml": MANIFEST.format(encryption=ENCRYPTION_DATA if encrypted else ""),
        **(extra or {}),
    }
    return zipped(parts, mimetype=ODT_MIMETYPE)


def fodt_file(body: str, *, automatic_styles: str = "", styles: str = "", prolog: str = "",
              mimetype: str = ODT_MIMETYPE) -> bytes:
    """A flat OpenDocument text (.fodt), as LibreOffice saves one: styles and body in one office:document."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n{prolog}<office:document {ODT_NAMESPACES} office:version="1.3" '
        f'office:mimetype="{mimetype}"><office:styles>{styles}</office:styles>'
        f"<office:automatic-styles>{automatic_styles}</office:automatic-styles>"
        f"<office:body><office:text>{body}</office:text></office:body></office:document>"
    ).encode()


EPUB_MIMETYPE = "application/epub+zip"
CONTAINER = (
    '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
    '<rootfiles><rootfile full-path="{opf}" media-type="application/oebps-package+xml"/></rootfiles></container>'
)
XHTML_DOCTYPE = (
    '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">\n'
)


def xhtml(body: str, title: str = "Chapter", doctype: str = "") -> str:
    """A content document as EPUB 3 writes it (and EPUB 2, with its doctype)."""
    return (
        f'<?xml version="1.0" encoding="utf-8"?>\n{doctype}<html xmlns="http://www.w3.org/1999/xhtml" '
        f'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>{title}</title></head><body>{body}</body></html>'
    )


NAV = xhtml(
    '<nav epub:type="toc"><h1>Contents</h1><ol><li><a href="one.xhtml">Navigation only</a></li></ol></nav>', "Nav"
)
NCX = (
    '<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>'
    '<navPoint id="n1"><navLabel><text>Table of contents entry</text></navLabel><content src="one.xhtml"/>'
    "</navPoint></navMap></ncx>"
)


def epub_file(chapters: list[tuple[str, str]], *, spine: list[str] | None = None, opf_dir: str = "OEBPS",
              manifest_extra: str = "", spine_extra: str = "", extra: dict[str, bytes | str] | None = None,
              container: str | None = None, mimetype: str | None = EPUB_MIMETYPE) -> bytes:
    """An EPUB 3 book: `chapters` as (file name, XHTML) in the manifest, read in `spine` order (ids are the
    file names without '.xhtml'; the chapters' order when not given), with a nav document and a toc.ncx."""
    ids = [path.removesuffix(".xhtml") for path, _ in chapters]
    items = "".join(
        f'<item id="{item_id}" href="{path}" media-type="application/xhtml+xml"/>' for item_id, (path, _) in zip(ids, chapters, strict=True)
    )
    refs = "".join(f'<itemref idref="{item_id}"/>' for item_id in (spine if spine is not None else ids))
    opf = (
        '<?xml version="1.0" encoding="UTF-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
        'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">b1'
        "</dc:identifier><dc:title>Book</dc:title><dc:language>en</dc:language></metadata>"
        f'<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        f'<item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>{items}{manifest_extra}</manifest>'
        f'<spine toc="ncx"><itemref idref="nav"/>{refs}{spine_extra}</spine></package>'
    )
    prefix = f"{opf_dir}/" if opf_dir else ""
    parts: dict[str, bytes | str] = {
        "META-INF/container.xml": container if container is not None else CONTAINER.format(opf=f"{prefix}content.opf"),
        f"{prefix}content.opf": opf,
        f"{prefix}nav.xhtml": NAV,
        f"{prefix}toc.ncx": NCX,
        **{f"{prefix}{path}": text for path, text in chapters},
        **(extra or {}),
    }
    return zipped(parts, mimetype=mimetype)


def laughs_doctype(root: str, levels: int = 10) -> str:
    """A doctype declaring billion-laughs entities (`levels` of 10: 10^levels 'lol's were they expanded)."""
    entities = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, levels))
    return f"<!DOCTYPE {root} [{entities}]>"


def drm_encryption(*paths: str) -> str:
    """META-INF/encryption.xml saying `paths` are AES-encrypted, as DRM (Adobe's ADEPT and others) leaves it."""
    entries = "".join(
        '<enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>'
        f'<enc:CipherData><enc:CipherReference URI="{path}"/></enc:CipherData></enc:EncryptedData>'
        for path in paths
    )
    return (
        '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
        f'xmlns:enc="http://www.w3.org/2001/04/xmlenc#">{entries}</encryption>'
    )
