#!/usr/bin/env node
// Checks that every slide's content fits its slide: renders Marp's HTML decks (the bespoke
// output that the 'slides' target writes to <build>/slides/NN-topic.html) in headless Chromium
// at the slide size, and reports every element or line of text that lies outside its section's
// content area (the section box less its padding, where the footer and the page number live) or
// that is clipped inside a box that scrolls (a table or code block wider than its box).
//
//   node check-overflow.mjs [--browser PATH] [--fixture FIXTURE.html] [--screenshots DIR] DECK.html...
//
// Exit status: 0 every slide fits; 1 some slide overflows, or the fixture was not judged as its
// notes expect; 2 a usage or browser error; 77 no Chromium found (CTest's SKIP_RETURN_CODE) or a
// deck's HTML is missing (the slides were not built).
//
// --fixture: first checks a deck whose slides say in their notes what the check must find
// ("overflow-check: expect fits", "... expect below", "... expect right"), so that a check that
// has gone blind fails too (slides/test/overflow-fixture.md).
// --screenshots DIR: writes DIR/<deck>-<slide>.png for every slide that overflows.
//
// The browser: --browser, else CHROME_PATH, else chromium/chromium-browser/google-chrome on PATH.
// As root (a CI container) Chromium's sandbox cannot start, so it runs with --no-sandbox there,
// as Marp does; CHROME_NO_SANDBOX=1 asks for the same elsewhere.
import { existsSync, mkdirSync, accessSync, constants } from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const SLIDE = { width: 1280, height: 720 }
const TOLERANCE_PX = 1 // sub-pixel rounding of text boxes

function usage(message) {
  if (message) console.error(`check-overflow: ${message}`)
  console.error('usage: node check-overflow.mjs [--browser PATH] [--fixture FIXTURE.html] ' +
                '[--screenshots DIR] DECK.html...')
  process.exit(2)
}

function parseArgs(argv) {
  const args = { browser: '', fixture: '', screenshots: '', decks: [] }
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i]
    const value = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`))
    if (a === '--browser') args.browser = value()
    else if (a === '--fixture') args.fixture = value()
    else if (a === '--screenshots') args.screenshots = value()
    else if (a === '-h' || a === '--help') usage()
    else if (a.startsWith('-')) usage(`unknown option ${a}`)
    else args.decks.push(a)
  }
  if (!args.decks.length && !args.fixture) usage('no deck given')
  return args
}

function findBrowser(given) {
  const executable = (p) => {
    try { accessSync(p, constants.X_OK); return true } catch { return false }
  }
  for (const p of [given, process.env.CHROME_PATH]) if (p) return executable(p) ? p : ''
  for (const name of ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'])
    for (const dir of (process.env.PATH || '').split(path.delimiter))
      if (dir && executable(path.join(dir, name))) return path.join(dir, name)
  return ''
}

// Runs in the page: every slide's problems, [{slide, notes, problems: [text]}].
function measureSlides(tolerance) {
  const describe = (el) => {
    const tag = el.tagName.toLowerCase()
    if (tag === 'mjx-container') return 'math'
    // The text as read, with each formula (an SVG without text) as [math].
    const read = (n) => n.nodeType === Node.TEXT_NODE ? n.textContent
      : n.tagName === 'MJX-CONTAINER' ? '[math]' : [...n.childNodes].map(read).join('')
    const text = read(el).replace(/\s+/g, ' ').trim()
    const what = tag === 'img' ? `<img src="${el.getAttribute('src')}">` : `<${tag}>`
    return text ? `${what} "${text.length > 60 ? text.slice(0, 57) + '...' : text}"` : what
  }
  const listLike = new Set(['UL', 'OL', 'TABLE', 'TBODY', 'THEAD', 'BLOCKQUOTE', 'DIV'])
  // The deepest child that still overflows, for a list or table: the item to shorten.
  const culprit = (el, outside) => {
    let cur = el
    for (;;) {
      if (!listLike.has(cur.tagName)) return cur
      const next = [...cur.children].find((c) => outside(c.getBoundingClientRect()))
      if (!next) return cur
      cur = next
    }
  }
  const sections = [...document.querySelectorAll('svg[data-marpit-svg] > foreignObject > section')]
  // Speaker notes: one element per slide that has notes, data-index the slide's (from 0).
  const notes = new Map([...document.querySelectorAll('.bespoke-marp-note')]
    .map((n) => [Number(n.dataset.index), n.textContent]))
  return sections.map((section, index) => {
    const box = section.getBoundingClientRect()
    const scale = box.width / section.offsetWidth || 1
    const style = getComputedStyle(section)
    const area = {
      left: box.left + parseFloat(style.paddingLeft) * scale,
      right: box.right - parseFloat(style.paddingRight) * scale,
      top: box.top + parseFloat(style.paddingTop) * scale,
      bottom: box.bottom - parseFloat(style.paddingBottom) * scale,
    }
    const beyond = (r) => {
      if (r.width === 0 && r.height === 0) return null
      const out = []
      if (r.bottom > area.bottom + tolerance)
        out.push(`${Math.round((r.bottom - area.bottom) / scale)}px below the content area` +
                 (r.top >= box.bottom ? ' (below the slide: not shown)'
                  : r.bottom > box.bottom ? ' (into the footer and past the slide\'s edge)'
                  : ' (into the footer)'))
      if (r.top < area.top - tolerance)
        out.push(`${Math.round((area.top - r.top) / scale)}px above the content area`)
      if (r.right > area.right + tolerance)
        out.push(`${Math.round((r.right - area.right) / scale)}px right of the content area`)
      if (r.left < area.left - tolerance)
        out.push(`${Math.round((area.left - r.left) / scale)}px left of the content area`)
      return out.length ? out.join(', ') : null
    }
    const problems = []
    const reported = new Set()
    const underReported = (el) => {
      for (let p = el; p && p !== section; p = p.parentElement) if (reported.has(p)) return true
      return false
    }
    // The footer, header and page number sit in the padding on purpose: not their subtrees.
    const walker = document.createTreeWalker(section, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (n) => (n.tagName === 'FOOTER' || n.tagName === 'HEADER' ? NodeFilter.FILTER_REJECT
                                                                          : NodeFilter.FILTER_ACCEPT),
    })
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.nodeType === Node.TEXT_NODE) {
        // Text that spills out of its element: a long word, a line that does not wrap.
        if (!node.textContent.trim() || underReported(node.parentElement)) continue
        const range = document.createRange()
        range.selectNodeContents(node)
        for (const r of range.getClientRects()) {
          const where = beyond(r)
          if (where) {
            const el = node.parentElement
            problems.push(`text of ${describe(el)}: ${where}`)
            reported.add(el)
            break
          }
        }
        continue
      }
      const el = node
      const cs = getComputedStyle(el)
      if (cs.display === 'none' || underReported(el)) continue
      const where = beyond(el.getBoundingClientRect())
      if (where) {
        const c = culprit(el, (r) => beyond(r) !== null)
        problems.push(`${describe(el)}${c !== el ? `, from ${describe(c)}` : ''}: ${where}`)
        reported.add(el)
        continue
      }
      // A box that scrolls or clips its content: what does not fit is cut off.
      const clips = (v) => v !== 'visible'
      if ((clips(cs.overflowX) && el.scrollWidth > el.clientWidth + tolerance) ||
          (clips(cs.overflowY) && el.scrollHeight > el.clientHeight + tolerance)) {
        const parts = []
        if (el.scrollWidth > el.clientWidth + tolerance)
          parts.push(`${el.scrollWidth - el.clientWidth}px wider`)
        if (el.scrollHeight > el.clientHeight + tolerance)
          parts.push(`${el.scrollHeight - el.clientHeight}px taller`)
        problems.push(`${describe(el)}: content ${parts.join(' and ')} than its box (cut off)`)
        reported.add(el)
      }
    }
    return { slide: index + 1, notes: notes.get(index) ?? '', problems }
  })
}

async function checkDeck(browser, file, screenshots) {
  const page = await browser.newPage()
  try {
    await page.setViewport(SLIDE)
    const errors = []
    page.on('pageerror', (e) => errors.push(e.message))
    await page.goto(pathToFileURL(path.resolve(file)).href, { waitUntil: 'load' })
    // The bespoke template shows one slide at a time, scaled to the window; lay them all out
    // one below the other at their own size instead, so that each can be measured.
    await page.addStyleTag({
      content: `html, body { height: auto !important; overflow: visible !important; }
        .bespoke-marp-osc, .bespoke-progress-parent { display: none !important; }
        .bespoke-marp-parent { position: static !important; inset: auto !important; }
        svg[data-marpit-svg] { display: block !important; position: static !important;
          content-visibility: visible !important; opacity: 1 !important; transform: none !important;
          width: ${SLIDE.width}px !important; height: ${SLIDE.height}px !important; }`,
    })
    await page.evaluate(async () => {
      await document.fonts.ready
      // Marp scales wide code blocks down in a ResizeObserver: give it two frames.
      for (let i = 0; i < 3; ++i) await new Promise((r) => requestAnimationFrame(() => r()))
    })
    const slides = await page.evaluate(measureSlides, TOLERANCE_PX)
    if (!slides.length) throw new Error(`${file}: no Marp slide found (${errors.join('; ') || 'not a Marp HTML deck?'})`)
    if (screenshots) {
      mkdirSync(screenshots, { recursive: true })
      const handles = await page.$$('svg[data-marpit-svg]')
      for (const s of slides) {
        if (!s.problems.length) continue
        await handles[s.slide - 1].screenshot({
          path: path.join(screenshots, `${path.basename(file, '.html')}-${s.slide}.png`),
        })
      }
    }
    return slides
  } finally {
    await page.close()
  }
}

function report(file, slides) {
  const deck = path.basename(file, '.html')
  let overflowing = 0
  for (const s of slides) {
    if (!s.problems.length) continue
    ++overflowing
    for (const p of s.problems) console.log(`${deck} slide ${s.slide}: ${p}`)
  }
  return overflowing
}

// The fixture's slides say what must be found: "overflow-check: expect fits|below|right|cut".
function judgeFixture(file, slides) {
  const failures = []
  let expected = 0
  for (const s of slides) {
    const m = /overflow-check: expect (fits|below|right|cut)/.exec(s.notes)
    if (!m) { failures.push(`slide ${s.slide} has no "overflow-check: expect ..." note`); continue }
    ++expected
    const found = s.problems.join('; ')
    const ok = m[1] === 'fits' ? s.problems.length === 0
      : m[1] === 'below' ? /below the content area/.test(found)
      : m[1] === 'right' ? /right of the content area/.test(found)
      : /than its box \(cut off\)/.test(found)
    if (!ok) failures.push(`slide ${s.slide}: expected "${m[1]}", found ${found ? `"${found}"` : 'nothing'}`)
  }
  if (!expected) failures.push('no slide with an "overflow-check: expect ..." note')
  return failures
}

async function main() {
  const args = parseArgs(process.argv.slice(2))
  const missing = [args.fixture, ...args.decks].filter((f) => f && !existsSync(f))
  if (missing.length) {
    console.log(`check-overflow: skipped: not built: ${missing.join(', ')} ` +
                '(build the \'slides\' target first)')
    process.exit(77)
  }
  const executablePath = findBrowser(args.browser)
  if (!executablePath) {
    const named = args.browser || process.env.CHROME_PATH
    console.log(`check-overflow: skipped: ${named ? `${named} (--browser or CHROME_PATH) is not an executable`
                                                  : 'no Chromium found (install chromium, or set CHROME_PATH)'}`)
    process.exit(77)
  }
  let puppeteer
  try {
    puppeteer = (await import('puppeteer-core')).default
  } catch {
    console.log('check-overflow: skipped: puppeteer-core is not installed in slides/node_modules ' +
                '(the \'slides\' target runs npm ci; or run it in slides/)')
    process.exit(77)
  }
  const noSandbox = process.getuid?.() === 0 || !!process.env.CHROME_NO_SANDBOX
  const browser = await puppeteer.launch({
    executablePath,
    headless: true,
    args: [...(noSandbox ? ['--no-sandbox'] : []), '--disable-gpu', '--disable-dev-shm-usage',
           '--font-render-hinting=none'],
  })
  let status = 0
  try {
    if (args.fixture) {
      const slides = await checkDeck(browser, args.fixture, '')
      const failures = judgeFixture(args.fixture, slides)
      const found = slides.filter((s) => s.problems.length).length
      if (failures.length) {
        report(args.fixture, slides)
        for (const f of failures) console.log(`FAIL fixture ${path.basename(args.fixture)}: ${f}`)
        status = 1
      } else {
        console.log(`fixture ${path.basename(args.fixture)}: ${found} of ${slides.length} slides ` +
                    'reported, each as its notes expect')
      }
    }
    let total = 0
    let bad = 0
    for (const file of args.decks) {
      const slides = await checkDeck(browser, file, args.screenshots)
      total += slides.length
      bad += report(file, slides)
    }
    if (args.decks.length) {
      console.log(`${args.decks.length} decks, ${total} slides: ${bad} overflowing`)
      if (bad) status = 1
    }
  } finally {
    await browser.close()
  }
  process.exit(status)
}

main().catch((e) => {
  console.error(`check-overflow: ${e.message}`)
  process.exit(2)
})
