"""Why is Boundary AP low? collect() gathers the numbers, figures() draws them with matplotlib
(imported only when called), write_html() writes one self-contained report (write_pngs: PNGs)."""
from .data import collect, coverage_warning
from .figures import figures, figure_errors, figure_pr_curves, figure_scatter, figure_thumbnail, to_png
from .html import write_html, write_pngs

__all__ = ["collect", "coverage_warning", "figures", "figure_errors", "figure_pr_curves", "figure_scatter",
           "figure_thumbnail", "to_png", "write_html", "write_pngs"]
