"""One-page PDFs drawn with reportlab, for tests of how the loader reads a page."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any


def one_page_pdf(draw: Callable[[Any], None]) -> bytes:
    """A one-page A4 PDF in 11 pt Helvetica, drawn by `draw(canvas)`."""
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    page = canvas.Canvas(buffer, pagesize=(595, 842))
    page.setFont("Helvetica", 11)
    draw(page)
    page.showPage()
    page.save()
    return buffer.getvalue()
