#include "patch.hpp"

#include <fstream>
#include <sstream>

namespace lab {

namespace {

/// The lines of `text` without their "\n" (a last line without one counts as a line).
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) {
      lines.push_back(text.substr(at));
      break;
    }
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

/// The lines of `text` with their "\n" (the last one may lack it): what a hunk line is compared to.
std::vector<std::string> lines_with_endings(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::size_t next = end == std::string::npos ? text.size() : end + 1;
    lines.push_back(text.substr(at, next - at));
    at = next;
  }
  return lines;
}

/// A line for a message: quoted, cut at 60 characters, its missing "\n" said in words.
std::string shown(const std::string& line) {
  const bool ended = !line.empty() && line.back() == '\n';
  std::string body = ended ? line.substr(0, line.size() - 1) : line;
  if (body.size() > 60) body = body.substr(0, 57) + "...";
  return "\"" + body + "\"" + (ended ? "" : " (no newline at end of file)");
}

/// Reads "N" or "N,M" at `s[at]`; the count is 1 when not given. False if not a number.
bool read_range(const std::string& s, std::size_t& at, long& start, long& count) {
  auto number = [&](long& out) {
    const std::size_t from = at;
    out = 0;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9' && at - from < 9) out = out * 10 + (s[at++] - '0');
    return at > from && (at >= s.size() || s[at] < '0' || s[at] > '9');
  };
  if (!number(start)) return false;
  count = 1;
  if (at < s.size() && s[at] == ',') {
    ++at;
    return number(count);
  }
  return true;
}

/// "@@ -a,b +c,d @@ anything": false unless the line has exactly that shape.
bool read_hunk_header(const std::string& line, Hunk& h) {
  std::size_t at = 0;
  auto literal = [&](const char* text) {
    const std::string t(text);
    if (line.compare(at, t.size(), t) != 0) return false;
    at += t.size();
    return true;
  };
  if (!literal("@@ -") || !read_range(line, at, h.old_start, h.old_count) || !literal(" +") ||
      !read_range(line, at, h.new_start, h.new_count) || !literal(" @@"))
    return false;
  // A line number 0 is only for an empty side (a file created, or emptied).
  if ((h.old_start == 0 && h.old_count != 0) || (h.new_start == 0 && h.new_count != 0)) return false;
  h.header = line.substr(0, at);
  return true;
}

/// The path of a "--- " or "+++ " line: a tab and what follows (diff's date) dropped.
std::string header_path(const std::string& line) {
  const std::string rest = line.substr(4);
  return rest.substr(0, rest.find('\t'));
}

std::string read_whole(const fs::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PatchError(what + ": cannot read " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Patch parse_patch(const std::string& text, const std::string& name) {
  const std::vector<std::string> lines = split_lines(text);
  auto fail = [&](std::size_t i, const std::string& what) -> PatchError {
    return PatchError(name + ":" + std::to_string(i + 1) + ": " + what);
  };
  Patch p;
  p.name = name;
  std::size_t i = 0;
  bool git = false;  // `git diff` names the two sides a/<path> and b/<path>
  for (; i < lines.size() && lines[i].rfind("--- ", 0) != 0; ++i) {
    if (lines[i].rfind("@@", 0) == 0) throw fail(i, "a hunk before the \"--- <file>\" line");
    if (lines[i].rfind("diff --git ", 0) == 0) git = true;
  }
  if (i == lines.size()) throw PatchError(name + ": not a unified diff (no \"--- <file>\" line)");
  p.old_path = header_path(lines[i]);
  if (i + 1 >= lines.size() || lines[i + 1].rfind("+++ ", 0) != 0)
    throw fail(i + 1, "a \"+++ <file>\" line must follow the \"---\" line");
  p.new_path = header_path(lines[i + 1]);
  if (git && p.old_path.rfind("a/", 0) == 0) p.old_path.erase(0, 2);
  if (git && p.new_path.rfind("b/", 0) == 0) p.new_path.erase(0, 2);
  i += 2;

  while (i < lines.size()) {
    if (lines[i].rfind("--- ", 0) == 0) throw fail(i, "a second file: a patch holds one file");
    Hunk h;
    if (!read_hunk_header(lines[i], h))
      throw fail(i, "expected a hunk header \"@@ -a,b +c,d @@\", found " + shown(lines[i] + "\n"));
    const std::string which = "hunk " + std::to_string(p.hunks.size() + 1) + " (" + h.header + ")";
    long old_left = h.old_count, new_left = h.new_count;
    ++i;
    // A "\ No newline at end of file" may follow the hunk's last line too.
    while (old_left > 0 || new_left > 0 || (i < lines.size() && lines[i].rfind('\\', 0) == 0)) {
      if (i == lines.size())
        throw PatchError(name + ": " + which + " is cut short: the patch ends " +
                         std::to_string(old_left) + " old and " + std::to_string(new_left) +
                         " new lines before its header's counts");
      const std::string& l = lines[i];
      const char op = l.empty() ? '\0' : l[0];
      if (op == '\\') {  // the line before has no newline at the end of its file
        if (h.lines.empty() || h.lines.back().text.empty() || h.lines.back().text.back() != '\n')
          throw fail(i, "\"" + l + "\" follows no line of " + which);
        h.lines.back().text.pop_back();
        ++i;
        continue;
      }
      if (op != ' ' && op != '-' && op != '+')
        throw fail(i, "a line of " + which + " must start with ' ', '-' or '+', found " + shown(l + "\n"));
      if (op != '+') --old_left;
      if (op != '-') --new_left;
      if (old_left < 0 || new_left < 0) throw fail(i, which + " has more lines than its header counts");
      h.lines.push_back({op, l.substr(1) + "\n"});
      ++i;
    }
    p.hunks.push_back(std::move(h));
  }
  if (p.hunks.empty()) throw PatchError(name + ": no hunks (the patch changes nothing)");
  return p;
}

std::string apply_patch(const Patch& patch, const std::string& original) {
  const std::vector<std::string> base = lines_with_endings(original);
  std::string out;
  long out_lines = 0;
  std::size_t cursor = 0;  // the next line of `base` not yet copied or consumed
  for (std::size_t k = 0; k < patch.hunks.size(); ++k) {
    const Hunk& h = patch.hunks[k];
    const std::string which = patch.name + ": hunk " + std::to_string(k + 1) + " (" + h.header + ")";
    // An empty old side names the line it goes after; any other, its first line.
    std::size_t at = static_cast<std::size_t>(h.old_count == 0 ? h.old_start : h.old_start - 1);
    if (at < cursor) throw PatchError(which + " overlaps the hunk before it or comes before it");
    if (at > base.size())
      throw PatchError(which + " starts past the end of " + patch.old_path + " (" +
                       std::to_string(base.size()) + " lines)");
    for (; cursor < at; ++cursor, ++out_lines) out += base[cursor];
    const long lands = h.new_count == 0 ? out_lines : out_lines + 1;
    if (h.new_start != lands)
      throw PatchError(which + " says it makes line " + std::to_string(h.new_start) +
                       " of the result, but lands at line " + std::to_string(lands));
    for (const HunkLine& line : h.lines) {
      if (line.op != '+') {
        if (at >= base.size())
          throw PatchError(which + " does not apply: " + patch.old_path + " ends at line " +
                           std::to_string(base.size()) + " where the patch has " + shown(line.text));
        if (base[at] != line.text)
          throw PatchError(which + " does not apply: line " + std::to_string(at + 1) + " of " +
                           patch.old_path + " is " + shown(base[at]) + " where the patch has " +
                           shown(line.text));
        ++at;
      }
      if (line.op != '-') {
        out += line.text;
        ++out_lines;
      }
    }
    cursor = at;
  }
  for (; cursor < base.size(); ++cursor) out += base[cursor];
  return out;
}

fs::path mutant_patch(const fs::path& source_dir, const std::string& lesson, const std::string& name) {
  return source_dir / "solutions" / lesson / "mutants" / (name + ".patch");
}

std::string materialise_mutant(const fs::path& source_dir, const std::string& lesson,
                               const std::string& name) {
  const std::string shown_name = "solutions/" + lesson + "/mutants/" + name + ".patch";
  const Patch p = parse_patch(read_whole(mutant_patch(source_dir, lesson, name), shown_name), shown_name);
  const std::string solution = "solutions/" + lesson + "/exercise.cu";
  const std::string starter = "lessons/" + lesson + "/exercise.cu";
  if (p.old_path != solution && p.old_path != starter)
    throw PatchError(shown_name + ": patches \"" + p.old_path + "\"; a mutant is a patch of " +
                     solution + " or " + starter);
  return apply_patch(p, read_whole(source_dir / p.old_path, shown_name));
}

}  // namespace lab
