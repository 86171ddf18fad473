"""MarkupSafe's own smoke checks (stdlib only): builders' generic probe has already checked
the version and that ``markupsafe._speedups`` loads from the venv; this checks that the
C speedups are what ``escape`` uses and that they give the right answers.

Facts arrive as JSON on stdin; one JSON document ``{"checks": [...]}`` goes to stdout.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    json.load(sys.stdin)
    import markupsafe
    from markupsafe import _speedups

    checks = [
        {"name": "escape uses the C speedups", "ok": getattr(markupsafe, "_escape_inner", None) is _speedups._escape_inner,
         "detail": f"markupsafe._escape_inner is {getattr(markupsafe, '_escape_inner', None)!r}"},
        {"name": "escape", "ok": str(markupsafe.escape("<a href='x'>&</a>")) == "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;",
         "detail": str(markupsafe.escape("<a href='x'>&</a>"))},
        {"name": "Markup.striptags", "ok": markupsafe.Markup("<b>bold</b> text").striptags() == "bold text",
         "detail": markupsafe.Markup("<b>bold</b> text").striptags()},
    ]
    print(json.dumps({"checks": checks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
