#!/usr/bin/env python3
"""How much of each lesson harness is plumbing (issue #47's measure, not an estimate).

Every line of a harness (lessons/*/main.cu) is one of:
  teaching  kernels and device code the lesson hands out, the variants and their launch code,
            comments that explain the topic, the problem's sizes, bytes and FLOPs, notes, metrics;
  plumbing  validation, references used only to check, recording, seeds, guards, timed-call
            checks, profile and replay branches, argument handling;
  neutral   blank lines, preprocessor lines, lines of braces and brackets only.

The rules, in order (nothing is entered by line number, so anyone gets the same table):
 1. The source is split into statements by brace matching (comments and strings set aside); a
    function, struct, lambda or control statement holds the statements of its body. A comment
    counts with the statement under it.
 2. A statement named in scripts/harness-share.toml (per lesson, by function, struct or lambda
    name, each with its reason) is that class, all of it.
 3. A definition whose name says it checks (PLUMBING_NAMES), or that builds lab::Checks or
    timed-call checks, is plumbing, all of it; a __global__ or __device__ function is teaching.
 4. Any other statement that uses a protocol name of the library (PLUMBING_WORDS: validate,
    seeds, tolerances, lesson.option, profiling() ...) before its first block is plumbing, body
    included (a profile branch, a validation loop). Otherwise its own lines are teaching and the
    statements of its body are judged one by one (rule 2 on); a block whose statements are all
    plumbing makes its header and closing lines plumbing too.
The share is plumbing / (teaching + plumbing). --check BAR exits 1 naming every harness over BAR;
--explain prints each line with its class (T, P, or a blank for neutral).
"""
import argparse
import pathlib
import re
import sys
import tomllib

# Library calls and names that belong to the protocol, not to the lesson's topic.
PLUMBING_WORDS = re.compile(
    r"validat|\bChecks\b|\bProtocol\b|[A-Za-z_]*[Ss]eeds?\b|\bpoison|\barm\b|\bguard|"
    r"\boption\b|invalid_argument|\bprofiling\b|replay|changed_input|inputs_changed|"
    r"count_changed|\bcompare\b|[Tt]olerance|KeptReference|\bLook\b|\blook\b|random_input|"
    r"fill_random_host|TimedCall|\bverify|check|\bexpected|\breference|\bwant\b|mismatch|"
    r"\b[Cc]ases?\b|[Aa]udit|\bthrow\b")
# A function, struct or lambda with one of these in its name checks rather than teaches.
PLUMBING_NAMES = re.compile(
    r"check|valid|verif|reference|expected|tolerance|audit|guard|poison|seed|record|replay|"
    r"judge|wrong|differ|compare|outcome|accuracy|mismatch|^cases?$", re.IGNORECASE)
DEFINITION = re.compile(r"^\s*(?:template\s*<[^;{]*>\s*)?(?:struct|class|enum)\b|\)\s*(?:const\s*)?"
                        r"(?:mutable\s*)?(?:->\s*[\w:<>]+\s*)?(?::[^;{]*)?$")
CONTROL = re.compile(r"\s*(?:if|for|while|switch|else|do|return|try)\b")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "static_cast", "reinterpret_cast",
            "const_cast", "catch", "__launch_bounds__", "alignas", "decltype", "template"}


def strip(text):
    """The source with comments removed and string contents replaced by '`' (so a string is
    neither blank nor read as code). Returns (code, comment_lines): one code string, line breaks
    kept, and the set of line indexes that hold a comment."""
    out, comments = [], set()
    i, line, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            line += 1
            i += 1
        elif text.startswith("//", i):
            comments.add(line)
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for ch in text[i:end]:
                if ch == "\n":
                    out.append(ch)
                    line += 1
                comments.add(line)
            i = end
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.index("(", i)
            close = ")" + text[i + 2:open_paren] + '"'
            end = text.find(close, open_paren)
            end = n if end < 0 else end + len(close)
            for ch in text[i:end]:
                out.append("\n" if ch == "\n" else "`")
                line += ch == "\n"
            i = end
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000'003
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + "`" * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out), comments


class Statement:
    def __init__(self, start, end, blocks, code):
        self.start, self.end, self.blocks = start, end, blocks  # blocks: [(open, close, [Statement])]
        own, at = [], start
        for open_, close, _ in blocks:
            own.append(code[at:open_ + 1])
            at = close
        own.append(code[at:end])
        self.head = code[start:blocks[0][0]] if blocks else code[start:end]
        self.own = "".join(own)

    def name(self):
        m = re.match(r"\s*(?:template\s*<[^;{]*>\s*)?(?:struct|class|enum(?:\s+class)?)\s+(\w+)", self.head)
        if m:
            return m.group(1)
        m = re.search(r"([\w.]+)\s*=\s*\[", self.head)
        if m:
            return m.group(1).split(".")[-1]
        for m in re.finditer(r"(\w+)\s*(?:<[^;(){}]*>)?\s*\(", self.head):
            if m.group(1) not in KEYWORDS:
                return m.group(1)
        return ""


def guarded_part(text):
    """What decides a one-line if: its statement, unless that only leaves (`if (l.profiling())
    return;` is a guard, `if (!l.profiling()) demo();` a demonstration); otherwise all of it."""
    m = re.match(r"\s*if\s*\(", text)
    if not m:
        return text
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    body = text[i:]
    return text if re.match(r"\s*(?:return|continue|break|throw)\b", body) else body


def declared_name(st):
    """The name a statement declares or defines (a variable, function, struct), or ''."""
    if CONTROL.match(st.head) or re.match(r"\s*(?:throw|delete|using|typedef)\b", st.head):
        return ""
    if st.blocks and DEFINITION.search(st.head):
        return st.name()
    m = re.match(r"\s*(?:[\w:]+(?:<[^;{}]*?>)?[\s*&]+)+(\w+)\s*(?:\[[^\]]*\])?\s*[({=;]", st.head)
    return m.group(1) if m else ""


def parse(code, i, stop, match):
    """The statements of code[i:stop] (one block's body, or the file)."""
    statements = []
    while True:
        while i < stop and code[i].isspace():
            i += 1
        if i >= stop:
            return statements
        start, blocks, depth = i, [], 0
        while i < stop:
            c = code[i]
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif c == "{":
                close = match[i]
                blocks.append((i, close, parse(code, i + 1, close, match)))
                i = close + 1
                rest = code[i:stop].lstrip()
                if depth == 0 and not re.match(r"[;,.)(\]]|else\b|catch\b|while\b", rest):
                    break
                continue
            elif c == ";" and depth == 0:
                i += 1
                break
            i += 1
        statements.append(Statement(start, i, blocks, code))


def match_braces(code, path):
    match, stack = {}, []
    for i, c in enumerate(code):
        if c == "{":
            stack.append(i)
        elif c == "}":
            if not stack:
                raise SystemExit(f"{path}: unbalanced '}}' at line {code.count(chr(10), 0, i) + 1}")
            match[stack.pop()] = i
    if stack:
        raise SystemExit(f"{path}: unbalanced '{{' at line {code.count(chr(10), 0, stack[-1]) + 1}")
    return match


def classify(path, overrides):
    """One class per line: 'T', 'P' or '' (neutral)."""
    text = pathlib.Path(path).read_text()
    lines = text.split("\n")
    # Preprocessor lines are neutral and take no part in the brace matching.
    kept = "\n".join("" if l.lstrip().startswith("#") else l for l in lines)
    code, comment_lines = strip(kept)
    code_lines = code.split("\n")
    line_of = [0] * (len(code) + 1)
    for i, c in enumerate(code):
        line_of[i + 1] = line_of[i] + (c == "\n")
    classes = ["T"] * len(lines)  # a comment outside every statement explains the topic

    def paint(first, last, cls):
        for k in range(first, last + 1):
            classes[k] = cls

    def first_line(st):
        # The comment lines right above a statement (no blank line between) count with it.
        k = line_of[st.start]
        while k > 0 and k - 1 in comment_lines and not code_lines[k - 1].strip():
            k -= 1
        return k

    def judge(st):
        """Paints the statement; returns its class when all of it is one class, else None."""
        name = st.name()
        cls = overrides.get(name)
        definition = (bool(st.blocks) and not CONTROL.match(st.head)
                      and bool(DEFINITION.search(st.head)))
        if cls is None and definition:
            if PLUMBING_NAMES.search(name) or re.search(r"\bChecks<|TimedCall", st.head):
                cls = "P"
            elif re.search(r"__global__|__device__", st.head):
                cls = "T"
        control = bool(CONTROL.match(st.head)) and bool(st.blocks)
        if cls is None and st.blocks and not definition and not control and PLUMBING_WORDS.search(st.head):
            cls = "P"
        if cls is None and not st.blocks:
            cls = "P" if PLUMBING_WORDS.search(guarded_part(st.own)) else "T"
        if cls is not None:
            paint(first_line(st), line_of[st.end - 1], cls)
            return cls
        paint(first_line(st), line_of[st.end - 1], "P" if PLUMBING_WORDS.search(st.own) else "T")
        inner = [c for _, close, body in st.blocks for c in judge_all(body, close)]
        if inner and all(c == "P" for c in inner):
            paint(first_line(st), line_of[st.end - 1], "P")
            return "P"
        return None

    def judge_all(statements, region_end):
        """Judges a block's statements, last first: a name declared or defined here (not a
        kernel) whose every use after it in the block is on plumbing lines is plumbing."""
        out = []
        for st in reversed(statements):
            cls = judge(st)
            name = declared_name(st)
            if cls != "P" and name and name not in overrides and "__global__" not in st.head:
                uses = {line_of[m.start() + st.end]
                        for m in re.finditer(rf"\b{name}\b", code[st.end:region_end])}
                if uses and all(classes[k] == "P" for k in uses):
                    paint(first_line(st), line_of[st.end - 1], "P")
                    cls = "P"
            out.append(cls)
        return out[::-1]

    def flatten(statements):  # a namespace only groups
        for st in statements:
            if re.match(r"\s*namespace\b", st.head) and st.blocks:
                yield from flatten(st.blocks[0][2])
            else:
                yield st

    judge_all(list(flatten(parse(code, 0, len(code), match_braces(code, path)))), len(code))
    for k, line in enumerate(lines):
        c = code_lines[k].strip()
        if not line.strip() or line.lstrip().startswith("#"):
            classes[k] = ""
        elif c and re.fullmatch(r"[{}()\[\];,\s]*|namespace(\s+\w+)?\s*\{", c):
            classes[k] = ""
        elif not c and k not in comment_lines:
            classes[k] = ""
    return lines, classes


def load_overrides(table_path):
    """{lesson: {name: 'T' or 'P'}} from the committed table (every entry needs a reason)."""
    if not table_path.exists():
        return {}
    with open(table_path, "rb") as f:
        data = tomllib.load(f)
    out = {}
    for entry in data.get("override", []):
        where = f"{table_path}: override {entry.get('lesson')}/{entry.get('name')}"
        if entry.get("class") not in ("teaching", "plumbing") or not entry.get("reason"):
            raise SystemExit(f"{where}: needs class = \"teaching\" or \"plumbing\" and a reason")
        out.setdefault(entry["lesson"], {})[entry["name"]] = "T" if entry["class"] == "teaching" else "P"
    return out


def lesson_of(path):
    p = pathlib.Path(path)
    return p.parent.name if p.name == "main.cu" else p.stem


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", help="harnesses (default: lessons/*/main.cu)")
    parser.add_argument("--table", type=pathlib.Path, default=root / "scripts" / "harness-share.toml",
                        help="per-lesson overrides by name (default: %(default)s)")
    parser.add_argument("--check", type=float, metavar="BAR",
                        help="exit 1 if any harness's plumbing share is over BAR (e.g. 0.25)")
    parser.add_argument("--explain", action="store_true", help="print every line with its class")
    args = parser.parse_args()
    files = args.files or sorted(str(p) for p in (root / "lessons").glob("*/main.cu"))
    overrides = load_overrides(args.table)

    rows, over = [], []
    for path in files:
        if not pathlib.Path(path).is_file():
            raise SystemExit(f"harness-share: {path}: no such file")
        lesson = lesson_of(path)
        lines, classes = classify(path, {**overrides.get("*", {}), **overrides.get(lesson, {})})
        if args.explain:
            for k, (line, cls) in enumerate(zip(lines[:-1] if lines[-1] == "" else lines, classes)):
                print(f"{lesson}:{k + 1:<4} {cls or ' '} {line}")
        count = len(lines) - (lines[-1] == "")
        teaching, plumbing = classes[:count].count("T"), classes[:count].count("P")
        share = plumbing / (teaching + plumbing) if teaching + plumbing else 0.0
        rows.append((lesson, count, teaching, plumbing, share))
        if args.check is not None and share > args.check:
            over.append(f"{lesson} ({share:.1%})")

    print(f"{'lesson':<22} {'lines':>6} {'teaching':>9} {'plumbing':>9} {'neutral':>8} {'plumbing share':>15}")
    for lesson, count, teaching, plumbing, share in rows:
        print(f"{lesson:<22} {count:>6} {teaching:>9} {plumbing:>9} {count - teaching - plumbing:>8} {share:>15.1%}")
    total = [sum(r[k] for r in rows) for k in (1, 2, 3)]
    share = total[2] / (total[1] + total[2]) if total[1] + total[2] else 0.0
    print(f"{'total':<22} {total[0]:>6} {total[1]:>9} {total[2]:>9} {total[0] - total[1] - total[2]:>8} {share:>15.1%}")
    if over:
        print(f"over the bar of {args.check:.0%} plumbing: " + ", ".join(over))
        return 1
    if args.check is not None:
        print(f"every harness is at most {args.check:.0%} plumbing")
    return 0


if __name__ == "__main__":
    sys.exit(main())
