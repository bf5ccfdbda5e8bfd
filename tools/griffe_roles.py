"""A Griffe extension: the Sphinx roles of bisent's docstrings as Markdown code on the Python API page.

The docstrings name other objects the Sphinx way (``:class:`SentenceAvg```, ``:func:`~bisent.mining.retrieval.mine```)
and open literal blocks with ``::``, which Markdown shows as they are. Here a role becomes a code span of its target
(``~`` keeps the last name only, as Sphinx does) and a paragraph's closing ``::`` a colon.
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|obj|exc|const):`(~?)([^`]+)`")
LITERAL = re.compile(r"(?<=\S)::$", re.M)


def markdown(text: str) -> str:
    """``text`` with each role as a code span and each closing ``::`` as ``:``."""
    text = ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)
    return LITERAL.sub(":", text)


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
