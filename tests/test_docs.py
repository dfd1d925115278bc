"""The docs a reader finishes: every relative link in README.md and docs/ resolves, and no page names a
path of the machine that measured it."""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, 'README.md'), *sorted(glob.glob(os.path.join(ROOT, 'docs', '**', '*.md'), recursive=True)),
         *sorted(glob.glob(os.path.join(ROOT, 'scripts', '**', '*.md'), recursive=True))]
LINK = re.compile(r'\]\(([^)\s]+)\)')


@pytest.mark.parametrize('page', PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_relative_links_resolve(page):
    text = open(page).read()
    for target in LINK.findall(text):
        if re.match(r'[a-z]+:', target) or target.startswith('#'):
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(page), target.split('#')[0]))
        assert os.path.exists(path), f'{os.path.relpath(page, ROOT)} links to {target}, which does not exist'


@pytest.mark.parametrize('page', PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_scratch_paths(page):
    text = open(page).read()
    for scratch in ('/work/', '/root/'):
        assert scratch not in text, f'{os.path.relpath(page, ROOT)} names {scratch}'
