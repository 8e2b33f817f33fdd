"""The matrix pages' one stylesheet (inline in every page) and the filters, which are CSS only: radio buttons and
``:has()`` rules hide the rows of other interfaces and the columns (or check rows) of other areas, so a page needs
no script and no server (a browser without ``:has()`` shows everything)."""

from __future__ import annotations

from html import escape as e

from gatecheck.conformance.matrix.view import BANDS

__all__ = ["CSS", "band_css", "filter_css", "filter_form", "INTERFACES", "area_class"]

INTERFACES = ("asgi", "rsgi", "wsgi")

CSS = """
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1em 1.2em;color:#222;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.2em 0 .4em}
h3.area{font-size:1.05em;margin:1em 0 .2em;color:#444}
h4{font-size:1em;margin:0 0 .3em}a{color:#1a57a5}p.lead{color:#444;max-width:75em;margin:.3em 0}
table.grid{border-collapse:separate;border-spacing:2px;table-layout:auto}
table.grid th{font-weight:600;font-size:11px;padding:3px 3px;text-align:center;vertical-align:bottom;
background:#f3f3f3}
table.grid th.tg,table.grid td.tg{text-align:left}
table.grid td.tg{max-width:11em;overflow-wrap:anywhere}table.grid td.srv{max-width:15em}
table.grid td{padding:2px 2px;text-align:center;min-width:2.8em;border-radius:3px}
table.grid td b{display:block;font-size:13px}
table.grid td small{display:block;font-size:10px;color:#333;white-space:nowrap}
table.grid td small.k{color:#7a3e00;font-weight:600}table.grid td small.f{color:#8b0000;font-weight:700}
table.grid td.v{font-size:11px;color:#555;text-align:left;background:none;min-width:0}
table.grid td.gap,table.grid th.gap{background:none;min-width:.5em;padding:0}
table.grid td.apart{background:#ede7f6}table.grid th.apart{background:#e3dcf0}
table.grid td.num{background:#f7f7f7;font-size:12px}
table.grid td.num.bad{background:#fde0dc;color:#8b0000;font-weight:600}
td.ns{background:repeating-linear-gradient(135deg,#eee 0 5px,#d5d5d5 5px 10px);color:#555}
td.na{background:#fafafa;color:#aaa}td.ro{background:#f0f0f0;color:#777}
tr.first td{border-top:3px solid #bbb}td.total{outline:2px solid #666;outline-offset:-2px}
td.srv b{font-size:14px}table.grid td.srv small{color:#555;white-space:normal}
.legend{display:flex;flex-wrap:wrap;gap:.3em 1.2em;margin:.5em 0;font-size:12px}
.legend span.sw{display:inline-block;width:2em;height:1em;vertical-align:middle;border-radius:3px;margin-right:.4em}
.notes{font-size:12px;color:#444;max-width:75em}
form.filters{display:flex;flex-wrap:wrap;gap:.2em .5em;align-items:center;margin:.6em 0;font-size:12px}
form.filters span.k{font-weight:600;margin-left:.6em}
form.filters input{position:absolute;opacity:0;width:1px;height:1px}
form.filters label{border:1px solid #bbb;border-radius:10px;padding:1px 8px;cursor:pointer;background:#fafafa}
form.filters input:checked+label{background:#1a57a5;color:#fff;border-color:#1a57a5}
form.filters input:focus-visible+label{outline:2px solid #1a57a5}
article{border-left:4px solid #ccc;padding:.3em .8em;margin:.8em 0;max-width:75em}
article.spec-failures{border-color:#e57373}article.known{border-color:#ffb74d}article.policy{border-color:#9575cd}
article.info{border-color:#90a4ae}
code.id{font-size:12px;overflow-wrap:anywhere}
span.lvl{font-size:11px;background:#eee;border-radius:3px;padding:1px 5px;margin-left:.4em}
span.out{font-size:11px;border-radius:3px;padding:1px 5px;margin-left:.3em;background:#fde0dc}
span.out.known{background:#ffe0b2}span.out.noted{background:#eceff1}span.out.passed{background:#c8e6c9}
span.out.unsupported,span.out.skipped{background:#eee}
p.meta{font-size:12px;color:#555;margin:.1em 0}
blockquote{margin:.3em 0;padding:.2em .8em;border-left:3px solid #bbb;background:#f8f8f8;font-style:italic;
max-width:75em}
p.accepts{font-size:13px;margin:.2em 0}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#fbf7f0;padding:.4em .6em;font-size:12px;margin:.3em 0;
max-height:22em;overflow:auto}
details{margin:.2em 0}summary{cursor:pointer;font-size:12px;color:#1a57a5}
table.list{border-collapse:collapse;width:100%}
table.list th,table.list td{border-bottom:1px solid #eee;padding:4px 6px;
text-align:left;vertical-align:top}table.list th{background:#f3f3f3;font-size:12px}table.list td.o{white-space:nowrap}
table.checks td.c{max-width:34em;overflow-wrap:anywhere;text-align:left}table.checks h3.area{text-align:left}
table.checks td.s{min-width:4.5em}
"""


def band_css() -> str:
    return (
        "".join(f"td.{css}{{background:{colour}}}.sw.{css}{{background:{colour}}}" for _, css, colour, _, _ in BANDS)
        + ".sw.ns{background:repeating-linear-gradient("
        "135deg,#eee 0 5px,#d5d5d5 5px 10px)}.sw.na{background:#fafafa;border:1px solid #ddd}.sw.ro{background:#f0f0f0}"
    )


def area_class(areas: list, area: str) -> str:
    """The CSS class of an area's column (and of a check row of that area): ``a<N>``, N its column index."""
    return f"a{areas.index(area)}" if area in areas else "a-other"


def filter_css(areas: list) -> str:
    """Rules of the filters: an interface hides rows (``tr[data-i]``) that lack it; an area hides the other
    areas' columns (``.ac``) and check rows (``tr[data-a]``)."""
    rules = [f"body:has(#f-{i}:checked) tr[data-i]:not([data-i~={i}]){{display:none}}" for i in INTERFACES]
    for n in range(len(areas)):
        rules.append(f"body:has(#f-a{n}:checked) .ac:not(.a{n}){{display:none}}")
        rules.append(f"body:has(#f-a{n}:checked) tr[data-a]:not([data-a=a{n}]){{display:none}}")
    return "".join(rules)


def filter_form(areas: list, short) -> str:
    """The radio buttons of the filters (``short``: an area's column label)."""

    def choice(name: str, ident: str, label: str, checked: bool = False, title: str = "") -> str:
        tip = f' title="{e(title)}"' if title else ""
        return (
            f"<input type=radio name={name} id=f-{ident}{' checked' if checked else ''}>"
            f"<label for=f-{ident}{tip}>{e(label)}</label>"
        )

    interfaces = "".join(choice("i", i, i.upper()) for i in INTERFACES)
    by_area = "".join(choice("a", f"a{n}", short(a), title=a) for n, a in enumerate(areas))
    return (
        f"<form class=filters><span class=k>interface</span>{choice('i', 'iall', 'all', True)}{interfaces}"
        f"<span class=k>area</span>{choice('a', 'aall', 'all', True)}{by_area}</form>"
    )
