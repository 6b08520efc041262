#!/usr/bin/env python3
"""The roofline picture as a browser draws it: `lab-check roofline --svg` on the committed runs
(measurements/h100, measurements/h200-harness-ab) and on a crowd of 40 memory-bound dots at
nearly one place, each SVG rendered in headless Chromium, where the page asks the DOM (getBBox)
for the box of every label (a dot's, a roof's) and reports any two that intersect and any that
leaves the plot. Every dot drawn must be named by a label, unless the caption counts labels left
out. The check must first find the overlap of a fixture, so that a blind check fails too.

    roofline_labels_browser.py --lab-check PATH --source-dir REPO [--browser PATH]

Exit status: 0 all pictures pass; 1 a picture fails (each problem on a line); 77 no Chromium
(CTest's SKIP_RETURN_CODE). The browser: --browser, else CHROME_PATH, else chromium,
chromium-browser, google-chrome-stable or google-chrome on PATH. As root (a CI container)
Chromium runs with --no-sandbox, as slides/check-overflow.mjs does; CHROME_NO_SANDBOX=1 asks for
the same elsewhere.
"""
import argparse
import glob
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Runs in the page, after the SVG above it: every label's box, from the renderer itself.
PAGE_SCRIPT = """
const result = document.getElementById('result');
try {
const svg = document.querySelector('svg');
const box = (el) => {
  const b = el.getBBox();
  return {text: el.textContent, left: b.x, top: b.y, right: b.x + b.width, bottom: b.y + b.height};
};
const labels = [...svg.querySelectorAll('text.label, text.roof-label')].map(box);
const problems = [];
const frameElement = svg.querySelector('rect.frame');
if (!frameElement) problems.push('no <rect class="frame">: the plot cannot be found');
const frame = frameElement ? box(frameElement) : {left: -1e9, top: -1e9, right: 1e9, bottom: 1e9};
for (let i = 0; i < labels.length; ++i) {
  const a = labels[i];
  for (let j = i + 1; j < labels.length; ++j) {
    const b = labels[j];
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
      problems.push(`"${a.text}" and "${b.text}" overlap`);
  }
  if (a.left < frame.left || a.right > frame.right || a.top < frame.top || a.bottom > frame.bottom)
    problems.push(`"${a.text}" reaches out of the plot`);
}
const caption = [...svg.querySelectorAll('text')].map((t) => t.textContent)
                  .find((t) => t.startsWith('Only in the table')) || '';
result.textContent = JSON.stringify({labels: labels.map((l) => l.text), problems, caption});
} catch (e) {
  result.textContent = JSON.stringify({labels: [], problems: [`the page failed: ${e}`], caption: ''});
}
"""

# Two labels that overlap and one past the frame: what the check must find.
FIXTURE_SVG = """<svg xmlns="http://www.w3.org/2000/svg" width="400" height="200">
<rect class="frame" x="10" y="10" width="300" height="150" fill="none"/>
<g font-family="monospace" font-size="11">
<text class="label" x="50" y="50">04 exercise</text>
<text class="roof-label" x="90" y="55">FP32 FMA 65.1 TFLOP/s</text>
<text class="label" x="280" y="100">08 reductions_exercise</text>
</g></svg>"""


def find_browser(given):
    def executable(path):
        return path and os.path.isfile(path) and os.access(path, os.X_OK)
    for path in (given, os.environ.get('CHROME_PATH')):
        if path:
            return path if executable(path) else ''
    for name in ('chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'):
        found = shutil.which(name)
        if found:
            return found
    return ''


def render(browser, svg_text, work, name):
    """The page's verdict on one SVG: {labels, problems, caption}."""
    svg_text = re.sub(r'^<\?xml[^>]*\?>\s*', '', svg_text)
    page = os.path.join(work, name + '.xhtml')
    with open(page, 'w', encoding='utf-8') as f:
        # XHTML: parsed as XML, so an SVG that is not well-formed shows no result at all.
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>' + name +
                '</title></head><body>\n' + svg_text + '\n<pre id="result"></pre>\n'
                '<script><![CDATA[' + PAGE_SCRIPT + ']]></script>\n</body></html>\n')
    args = [browser, '--headless', '--disable-gpu', '--dump-dom']
    if os.geteuid() == 0 or os.environ.get('CHROME_NO_SANDBOX') == '1':
        args.append('--no-sandbox')
    out = subprocess.run(args + ['file://' + os.path.abspath(page)], capture_output=True,
                         text=True, timeout=120)
    # Chromium's complaints about D-Bus and the like are noise; its last real line is kept.
    said = [l for l in out.stderr.splitlines() if 'dbus' not in l.lower() and l.strip()]
    m = re.search(r'<pre id="result">(.*?)</pre>', out.stdout, re.S)
    if not m or not m.group(1).strip():
        raise RuntimeError(f'{name}: the page gave no result (an SVG that is not well-formed '
                           f'XML?); {browser} exited {out.returncode}'
                           + (f': {said[-1][:300]}' if said else ''))
    return json.loads(html.unescape(m.group(1)))


def named(labels):
    """The "NN variant" names the labels hold ("08 cub, exercise, 10 read_twice")."""
    names = set()
    for label in labels:
        lesson = ''
        for part in label.split(', '):
            words = part.split(' ', 1)
            if len(words) == 2 and words[0].isdigit():
                lesson, part = words
            names.add(f'{lesson} {part}')
    return names


def crowded_result(path):
    """A result file of 40 memory-bound variants at nearly one place, and one compute-bound."""
    def variant(name, nbytes, flops, ms):
        s = ms * 1e-3
        return {'name': name, 'role': 'exercise', 'correct': True,
                'checks': [{'case': '1000x777', 'ok': True}],
                'time_ms': {'median': ms, 'q1': ms, 'q3': ms}, 'bytes': nbytes, 'flops': flops,
                'gbs': nbytes / s * 1e-9, 'gflops': flops / s * 1e-9, 'intensity': flops / nbytes}
    variants = []
    for i in range(40):
        intensity, gflops = 0.25 * (1 + 0.0012 * i), 400 * (1 + 0.0019 * i)
        flops = 1e9 * intensity
        variants.append(variant(f'kernel_{"x" * (i % 7)}{i}', 1e9, flops, flops / (gflops * 1e6)))
    variants.append(variant('exercise_sgemm', 1e8, 1e11, 4.0))
    doc = {'schema': 'cuda-perf-lab/result/1', 'lesson': '08-reductions', 'nonce': '',
           'device': {'name': 'Test GPU'},
           'ceilings': {'copy_gbs': 2000, 'h2d_pinned_gbs': 50.0, 'fp32_gflops': 50000},
           'variants': variants}
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(doc, f)


def check_picture(lab_check, browser, files, work, name):
    """The problems of one picture, as lines (none: it passes)."""
    svg = os.path.join(work, name + '.svg')
    out = subprocess.run([lab_check, 'roofline', *files, '--svg', svg, '--format', 'json'],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return [f'{name}: lab-check roofline exited {out.returncode}: {out.stderr.strip()}']
    drawn = {f'{row["lesson"].split("-")[0]} {row["variant"]}'
             for row in json.loads(out.stdout) if row['drawn']}
    with open(svg, encoding='utf-8') as f:
        seen = render(browser, f.read(), work, name)
    problems = [f'{name}: {p}' for p in seen['problems']]
    if not seen['labels']:
        problems.append(f'{name}: no label (<text class="label">) in the picture')
    missing = sorted(drawn - named(seen['labels']))
    if missing and 'left out for lack of room' not in seen['caption']:
        problems.append(f'{name}: dots without a label, and the caption does not say so: '
                        + ', '.join(missing))
    print(f'{name}: {len(files)} file(s), {len(drawn)} dots, {len(seen["labels"])} labels, '
          f'{len(seen["problems"])} problem(s)')
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--lab-check', required=True)
    parser.add_argument('--source-dir', required=True)
    parser.add_argument('--browser', default='')
    args = parser.parse_args()
    browser = find_browser(args.browser)
    if not browser:
        print('roofline-labels: skipped: no Chromium found (install chromium, or set CHROME_PATH)')
        return 77

    with tempfile.TemporaryDirectory(prefix='roofline-labels-') as work:
        # A check that has gone blind must fail too.
        fixture = render(browser, FIXTURE_SVG, work, 'fixture')
        expected = ['"04 exercise" and "FP32 FMA 65.1 TFLOP/s" overlap',
                    '"08 reductions_exercise" reaches out of the plot']
        if fixture['problems'] != expected:
            print(f'roofline-labels: the fixture was not judged as expected: {fixture["problems"]}')
            return 1

        m = os.path.join(args.source_dir, 'measurements')
        crowd = os.path.join(work, 'crowd.json')
        crowded_result(crowd)
        cases = {
            'h100-solutions': glob.glob(f'{m}/h100/*-solution.json'),
            'h100-starters': glob.glob(f'{m}/h100/*-starter.json'),
            'h200-solutions': glob.glob(f'{m}/h200-harness-ab/solution/after/*.json'),
            'h200-starters': glob.glob(f'{m}/h200-harness-ab/starter/after/*.json'),
            'crowd-of-40': [crowd],
        }
        problems = []
        for name, files in cases.items():
            if not files:
                problems.append(f'{name}: no result files found')
                continue
            try:
                problems += check_picture(args.lab_check, browser, sorted(files), work, name)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                problems.append(str(e))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
