"""The export's image budget has one source: ``taunotebook/export_budget.json``, which ``export-view`` reads and the
page's Export HTML (``js/shared/export_html.js``) imports; a JS number written beside it, or a file that cannot say
the budget, fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from taunotebook import export_view
from taunotebook.export_view import BUDGET_FILE, DEFAULT_MAX_IMAGE_BYTES, MAX_EXPORT_IMAGES_PER_TAG, _image_budget

EXPORT_HTML_JS = Path(__file__).resolve().parents[1] / "js" / "shared" / "export_html.js"


def test_python_s_budget_is_the_file_s():
    budget = json.loads(BUDGET_FILE.read_text(encoding="utf-8"))
    assert (MAX_EXPORT_IMAGES_PER_TAG, DEFAULT_MAX_IMAGE_BYTES) == (budget["max_images_per_tag"],
                                                                     budget["max_image_bytes"])
    assert BUDGET_FILE.parent == Path(export_view.__file__).resolve().parent  # shipped in the package


def test_the_page_s_export_imports_the_same_file_and_defines_no_number_of_its_own():
    source = EXPORT_HTML_JS.read_text(encoding="utf-8")
    imported = re.findall(r'^import (\w+) from "([^"]+\.json)" with \{ type: "json" \};$', source, re.M)
    assert len(imported) == 1, "export_html.js imports the export's budget from one JSON file"
    name, relative = imported[0]
    assert (EXPORT_HTML_JS.parent / relative).resolve() == BUDGET_FILE
    assert re.search(rf"export const MAX_EXPORT_IMAGES_PER_TAG = {name}\.max_images_per_tag;", source)
    assert re.search(rf"export const MAX_EXPORT_IMAGE_BYTES = {name}\.max_image_bytes;", source)


@pytest.mark.parametrize("text, words", [
    ("{", "cannot be read"),
    ('{"max_images_per_tag": 16}', "cannot be read"),
    ('{"max_images_per_tag": 0, "max_image_bytes": 10}', "positive integers"),
    ('{"max_images_per_tag": 2, "max_image_bytes": "4MB"}', "positive integers"),
])
def test_a_bad_budget_file_is_named_in_a_clear_error(tmp_path, text, words):
    path = tmp_path / "export_budget.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RuntimeError, match=words) as err:
        _image_budget(path)
    assert str(path) in str(err.value)
