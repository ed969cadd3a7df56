"""Published documents: a domain's written pages (a policy handbook, a product catalogue) as a
reader gets them, in plain text, HTML and PDF.

A :class:`Document` is a page in one language: a title, an edition line, and sections of
numbered paragraphs (each paragraph with an id a reader can cite, as ``[identity.verify_first]``).
The three renderings are made from the same fields, so they cannot disagree. Arabic pages run
right to left; the PDF shapes their letters with HarfBuzz and orders mixed Arabic and Latin text
with the Unicode bidirectional algorithm (fpdf2's), in the DejaVu Sans font that matplotlib
ships (a core dependency: nothing is downloaded). The PDF needs the ``pdf`` extra
(``pip install "telcoenv[pdf]"``: fpdf2 and uharfbuzz).
"""

from __future__ import annotations

import datetime as dt
import html
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from telcoenv.errors import UsageError
from telcoenv.specs import Language

__all__ = ["Document", "DocumentSection"]

#: The PDF's creation date: fixed, so that the same page gives the same bytes.
_PDF_DATE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class DocumentSection:
    """One section: its id, its heading and its paragraphs as ``(paragraph id, text)``."""

    section_id: str
    title: str
    paragraphs: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Document:
    """A page in one language, as a reader gets it. ``status`` (``in_force``, ``superseded``)
    and ``segment`` (``consumer``, ``business``) say which readers it is for."""

    title: str
    edition: str
    status: str
    segment: str
    language: Language
    sections: tuple[DocumentSection, ...]

    @property
    def direction(self) -> str:
        return "rtl" if self.language == "ar" else "ltr"

    @property
    def text(self) -> str:
        """The page as plain text: its title and edition, then each section's paragraphs."""
        lines = [f"{self.title} ({self.edition})"]
        for section in self.sections:
            lines += ["", f"## {section.title} [{section.section_id}]"]
            lines += [f"- {text} [{paragraph}]" for paragraph, text in section.paragraphs]
        return "\n".join(lines) + "\n"

    @property
    def html(self) -> str:
        """The page as a standalone HTML document (right to left in Arabic)."""
        parts = [
            f'<!DOCTYPE html>\n<html lang="{self.language}" dir="{self.direction}">',
            f'<head><meta charset="utf-8"><title>{html.escape(self.title)}</title></head>\n<body>',
            f"<h1>{html.escape(self.title)}</h1>",
            f'<p class="edition" data-status="{self.status}" data-segment="{self.segment}">'
            f"{html.escape(self.edition)}</p>",
        ]
        for section in self.sections:
            parts.append(
                f'<section id="{section.section_id}"><h2>{html.escape(section.title)}</h2>'
            )
            parts += [
                f'<p id="{paragraph}">{html.escape(text)}</p>'
                for paragraph, text in section.paragraphs
            ]
            parts.append("</section>")
        parts.append("</body>\n</html>\n")
        return "\n".join(parts)

    def pdf(self) -> bytes:
        """The page as an A4 PDF with its text embedded (searchable, copyable): the same bytes
        for the same page."""
        fpdf = _fpdf()
        pdf = fpdf.FPDF(format="A4")
        pdf.set_creation_date(_PDF_DATE)
        pdf.set_title(self.title)
        pdf.set_lang(self.language)
        regular, bold = _fonts()
        pdf.add_font("DejaVu", "", str(regular))
        pdf.add_font("DejaVu", "B", str(bold))
        pdf.set_text_shaping(use_shaping_engine=True, direction=self.direction)
        pdf.set_margins(20, 20, 20)
        pdf.set_auto_page_break(True, margin=20)
        pdf.add_page()
        align = "R" if self.direction == "rtl" else "L"
        width = pdf.epw
        pdf.set_font("DejaVu", "B", 16)
        pdf.multi_cell(width, 8, self.title, align=align, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("DejaVu", "", 9)
        pdf.multi_cell(width, 5, self.edition, align=align, new_x="LMARGIN", new_y="NEXT")
        for section in self.sections:
            pdf.ln(4)
            pdf.set_font("DejaVu", "B", 12)
            pdf.multi_cell(width, 7, section.title, align=align, new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("DejaVu", "", 10)
            for paragraph, text in section.paragraphs:
                pdf.multi_cell(
                    width, 5, f"{text} [{paragraph}]", align=align, new_x="LMARGIN", new_y="NEXT"
                )
                pdf.ln(1.5)
        return bytes(pdf.output())


def _fpdf() -> ModuleType:
    """fpdf2, imported only for a PDF."""
    try:
        import fpdf
        import uharfbuzz  # noqa: F401 - fpdf2's text shaping needs it
    except ImportError as exc:
        raise UsageError(
            f'a PDF needs the pdf extra ({exc.name} is not installed): pip install "telcoenv[pdf]"'
        ) from None
    return fpdf


def _fonts() -> tuple[Path, Path]:
    """DejaVu Sans, regular and bold (Latin and Arabic letters), from matplotlib's data."""
    import matplotlib

    folder = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    return folder / "DejaVuSans.ttf", folder / "DejaVuSans-Bold.ttf"
