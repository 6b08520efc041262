#include "corroborate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <tuple>
#include <unordered_map>

#include "lab/trace_tag.hpp"

namespace lab {

fs::path built_tracer() {
#ifdef LAB_TRACER_PATH
  return LAB_TRACER_PATH;
#else
  return {};
#endif
}

const char* to_string(Corroboration c) {
  switch (c) {
    case Corroboration::agrees: return "agrees";
    case Corroboration::disagrees: return "disagrees";
    case Corroboration::unavailable: return "unavailable";
    case Corroboration::off: return "off";
  }
  return "?";
}

namespace {

// A tagged kernel's launch, as the tracer saw it.
struct Edge {
  TraceTag tag{};
  bool spanned = false;  // a span of the tracer's already names it
};

bool opens(int edge) { return edge == kTraceLeadIn || edge == kTraceOpenMark; }

std::string time_text(double ms) {
  char buf[32];
  if (ms >= 1.0) std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  else std::snprintf(buf, sizeof buf, "%.2f us", ms * 1e3);
  return buf;
}

// The median of sorted values v[first, first + count).
double median_of(const std::vector<double>& v, std::size_t first, std::size_t count) {
  const std::size_t mid = first + count / 2;
  return count % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

struct SpanRecord {
  unsigned open = 0, close = 0;
  long long ns = 0;
};

// Turns every span into a TracedSample, after checking that its two kernels are an opening and
// a closing one of the same sample, as the library launches them.
void join_spans(std::vector<Edge>& edges, const std::unordered_map<unsigned, std::size_t>& by_id,
                const std::vector<SpanRecord>& spans, Trace& t) {
  std::map<std::pair<int, int>, int> seen;  // (measurement, sample) -> spans
  auto say = [&](const TraceTag& g, const std::string& what) {
    t.conflicts.push_back("sample " + std::to_string(g.sample) + " of measurement " +
                          std::to_string(g.measurement) + " " + what);
  };
  for (const SpanRecord& s : spans) {
    const auto open_at = by_id.find(s.open), close_at = by_id.find(s.close);
    if (open_at == by_id.end() || close_at == by_id.end()) {
      t.conflicts.push_back("a span names a launch the trace does not have (" +
                            std::to_string(s.open) + " to " + std::to_string(s.close) + ")");
      continue;
    }
    Edge& open = edges[open_at->second];
    Edge& close = edges[close_at->second];
    const TraceTag& a = open.tag;
    const TraceTag& b = close.tag;
    if (open.spanned || close.spanned) {
      say(a, "has a kernel that opens or closes two spans");
      continue;
    }
    open.spanned = close.spanned = true;
    if (a.sample < 0 && b.sample < 0) continue;  // warm-up
    if (!opens(a.edge) || opens(b.edge) || b.edge > kTraceCloseMark || a.edge < kTraceLeadIn)
      say(a, "was opened or closed by a kernel of the wrong kind");
    else if (a.measurement != b.measurement || a.sample != b.sample || a.variant != b.variant ||
             a.batch != b.batch)
      say(a, "was opened and closed with different tags");
    else if ((a.edge == kTraceLeadIn) != (b.edge == kTraceClockProbe))
      say(a, "was opened and closed by kernels of two different kinds");
    else if (a.batch < 1)
      say(a, "has a batch of " + std::to_string(a.batch));
    else if (++seen[{a.measurement, a.sample}] > 1)
      say(a, "was opened twice");
    else
      t.samples.push_back({a.measurement, a.variant, a.sample, a.batch, a.edge == kTraceLeadIn,
                           1e-6 * static_cast<double>(s.ns)});
  }
}

// The samples a variant reports (samples_ms) against the traced ones, per launch, sorted: the
// kept samples are `kept` of the `traced`, so the k-th fastest kept lies between the k-th and
// the (k + traced - kept)-th fastest traced, within the tolerance of one sample, give or take
// `slack` ranks (5% of them, at least 2): a traced span ends with an event the tracer records
// when the host launches the next kernel, so a sample whose host thread was held up reads
// longer there than between the program's events, and moves the ranks above it (seen on an H200:
// one traced span of 140 us beside 67-80 us samples). A forged sample still fails: faster than
// every traced one, or a median away from the traced. Where the file holds only an even spread
// of them (more than it writes), each lies within the traced range. Without samples_ms (files
// from before it) there is nothing to check: "".
std::string samples_problem(const json& variant, const std::vector<double>& traced, std::size_t kept,
                            double gap_ms, double resolution_ms, const std::string& who) {
  const json* written = variant.contains("samples_ms") ? &variant["samples_ms"] : nullptr;
  if (!written || !written->is_array() || written->empty()) return "";
  std::vector<double> reported;
  for (const json& x : *written)
    if (x.is_number()) reported.push_back(x.get<double>());
  std::sort(reported.begin(), reported.end());
  const std::size_t dropped = traced.size() - kept;
  const bool all = reported.size() == kept;
  const std::size_t slack = std::max<std::size_t>(2, reported.size() / 20);
  for (std::size_t k = 0; k < reported.size(); ++k) {
    const double fastest = traced[all && k > slack ? k - slack : 0];
    const double slowest = traced[all ? std::min(k + dropped + slack, traced.size() - 1) : traced.size() - 1];
    const double low = fastest * (1 - kTraceRelative) - gap_ms;
    const double high = slowest * (1 + kTraceRelative) + resolution_ms;
    if (reported[k] >= low && reported[k] <= high) continue;
    return who + "'s samples disagree with the checker's tracer: sample " + std::to_string(k + 1) +
           " of its " + std::to_string(reported.size()) + ", fastest first, is " +
           time_text(reported[k]) + " per launch, where the traced samples allow " + time_text(low) +
           " to " + time_text(high);
  }
  return "";
}

}  // namespace

Trace parse_trace(std::istream& in) {
  Trace t;
  std::string line;
  if (!std::getline(in, line)) return t;
  if (line != "lab-trace 2") {
    t.loaded = true;
    t.unusable = "the trace file is not one this checker reads (its first line is not \"lab-trace "
                 "2\": a tracer from another version of lab-check?)";
    return t;
  }
  t.loaded = t.set_up = true;
  std::vector<Edge> edges;
  std::unordered_map<unsigned, std::size_t> by_id;  // correlation id -> edge
  std::vector<SpanRecord> spans;
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    if (t.ended) {
      t.unusable = "the trace goes on after its end line (line " + std::to_string(number) + ")";
      return t;
    }
    // Each record is its letter and numbers, nothing else (%n: where parsing stopped).
    const char* text = line.c_str();
    const char kind = line.empty() ? '?' : line[0];
    int used = -1;
    auto whole = [&](int fields, int wanted) {
      return fields == wanted && used == static_cast<int>(line.size());
    };
    bool ok = false;
    if (kind == 'F') {
      t.set_up = false;
      t.unusable = "the tracer could not set up (" + line.substr(std::min<std::size_t>(2, line.size())) + ")";
      return t;
    } else if (kind == 'T') {
      unsigned id = 0;
      Edge e;
      ok = whole(std::sscanf(text, "T %u %d %d %d %d %d%n", &id, &e.tag.measurement, &e.tag.variant,
                             &e.tag.sample, &e.tag.batch, &e.tag.edge, &used),
                 6);
      if (ok && by_id.count(id)) {
        t.conflicts.push_back("two launches have the correlation id " + std::to_string(id));
      } else if (ok) {
        by_id[id] = edges.size();
        edges.push_back(e);
        ++t.launches;
      }
    } else if (kind == 'S') {
      SpanRecord s;
      ok = whole(std::sscanf(text, "S %u %u %lld%n", &s.open, &s.close, &s.ns, &used), 3) && s.ns >= 0;
      if (ok) spans.push_back(s);
      t.spans += ok ? 1 : 0;
    } else if (kind == 'E') {
      ok = t.ended = whole(std::sscanf(text, "E %zu%n", &t.lost, &used), 1);
    }
    if (!ok) {
      t.unusable = "the trace is damaged at line " + std::to_string(number);
      return t;
    }
  }
  if (!t.ended) {
    t.unusable = "the trace ends early: the program did not exit through exit() (it was killed, "
                 "or ended itself some other way)";
    return t;
  }
  join_spans(edges, by_id, spans, t);
  return t;
}

Trace read_trace(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return parse_trace(in);
}

CorroborationResult corroborate(const json& result, const Trace& trace) {
  CorroborationResult out;
  auto unavailable = [&](const std::string& why) {
    out.state = Corroboration::unavailable;
    out.message = why;
    return out;
  };
  if (!trace.loaded)
    return unavailable("the tracer wrote nothing: the CUDA driver did not load it (is this the "
                       "driver of a CUDA 13 toolkit? CUDA_INJECTION64_PATH is how the checker loads it)");
  if (!trace.set_up) return unavailable(trace.unusable);
  out.state = Corroboration::disagrees;
  if (!trace.unusable.empty()) {
    out.message = trace.unusable;
    return out;
  }
  if (!trace.conflicts.empty()) {
    out.message = "the trace holds kernels the library did not launch: " + trace.conflicts.front();
    return out;
  }
  // The ceilings are measured before any exercise code runs: a trace with no sample at all
  // means the tracer did not work here, whatever the program did. Unless the run measured no
  // ceilings and timed nothing (the checker's --no-ceilings run of the course's program that
  // only checks a record): then there is no time to corroborate.
  const json variants = result.value("variants", json::array());
  const bool timed_any = std::any_of(variants.begin(), variants.end(), [](const json& v) {
    return v.is_object() && v.contains("time_ms");
  });
  if (trace.samples.empty() && !timed_any && !result.contains("ceilings")) {
    out.state = Corroboration::agrees;
    out.message = "nothing was timed";
    return out;
  }
  if (trace.samples.empty())
    return unavailable("the tracer saw no sample of lab::benchmark (" + std::to_string(trace.launches) +
                       " tagged launches, " + std::to_string(trace.spans) +
                       " spans, none a sample)");

  // The traced samples by variant, once: a scan of the whole trace per variant was quadratic.
  std::unordered_map<int, std::vector<const TracedSample*>> traced_of;
  for (const TracedSample& s : trace.samples) traced_of[s.variant].push_back(&s);
  const std::vector<const TracedSample*> none;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const json& v = variants[i];
    if (!v.is_object() || !v.contains("time_ms") || !v["time_ms"].is_object()) continue;
    const auto found = traced_of.find(static_cast<int>(i));
    const std::vector<const TracedSample*>& samples = found == traced_of.end() ? none : found->second;
    VariantCheck c;
    c.name = v.value("name", std::string("?"));
    c.reported_ms = v["time_ms"].value("median", 0.0);
    c.reported_samples = static_cast<std::size_t>(std::max(0.0, v["time_ms"].value("n", 0.0)));
    c.dropped_samples = static_cast<std::size_t>(std::max(0.0, v.value("discarded_throttled", 0.0)));
    // The variant's last measurement is the one its result holds.
    int last = -1;
    for (const TracedSample* s : samples) last = std::max(last, s->measurement);
    std::vector<double> per_launch;
    bool lead_in = true;
    int batch = 0;
    for (const TracedSample* s : samples) {
      if (s->measurement != last) continue;
      per_launch.push_back(s->span_ms / s->batch);
      lead_in = lead_in && s->lead_in;
      batch = batch == 0 || batch == s->batch ? s->batch : -1;
    }
    std::sort(per_launch.begin(), per_launch.end());
    const std::size_t traced = per_launch.size(), kept = c.reported_samples;
    c.traced_samples = traced;
    const std::string who = "\"" + c.name + "\"";
    const std::string lost =
        trace.lost > 0 ? " (the tracer could not read the events of " + std::to_string(trace.lost) +
                             " samples)" : "";
    if (kept == 0 || !(c.reported_ms > 0)) {
      c.problem = who + " reports a time without samples";
    } else if (traced == 0) {
      c.problem = who + " reports " + std::to_string(kept) + " timed samples, and the checker's "
                  "tracer saw none of them" + lost;
    } else if (traced < kept || traced > kept + c.dropped_samples) {
      c.problem = who + " reports " + std::to_string(kept) + " timed samples" +
                  (c.dropped_samples ? " and " + std::to_string(c.dropped_samples) + " dropped" : "") +
                  ", but the checker's tracer saw " + std::to_string(traced) + lost;
    } else if ((traced - kept) * 10 > traced) {
      c.problem = who + " dropped " + std::to_string(traced - kept) + " of its " +
                  std::to_string(traced) + " samples as throttled: more than a tenth, too many for "
                  "its median to be checked (grade it again on a GPU that keeps its clock)";
    } else if (batch < 0) {
      c.problem = who + "'s samples were traced with different batch sizes";
    } else {
      // The kept samples are `kept` of the traced ones: their median lies between the median
      // of the fastest `kept` and that of the slowest `kept`.
      const double fastest = median_of(per_launch, 0, kept);
      const double slowest = median_of(per_launch, traced - kept, kept);
      const double gap = lead_in ? kTraceLeadInGapMs : kTraceMarkGapMs;
      c.traced_ms = median_of(per_launch, 0, traced);
      c.low_ms = fastest * (1 - kTraceRelative) - gap / batch;
      c.high_ms = slowest * (1 + kTraceRelative) + kTraceResolutionMs / batch;
      const std::string both = who + " reported a median of " + time_text(c.reported_ms) +
                               " per launch, but the checker's tracer measured " +
                               time_text(c.traced_ms) + " for the same " + std::to_string(traced) +
                               " samples";
      if (c.reported_ms < c.low_ms)
        c.problem = both + " (a reported time may be at most " + time_text(c.traced_ms - c.low_ms) +
                    " below the traced one)";
      else if (c.reported_ms > c.high_ms)
        c.problem = both + " (a reported time may be at most " + time_text(c.high_ms - c.traced_ms) +
                    " above the traced one)";
      else
        c.problem = samples_problem(v, per_launch, kept, gap / batch, kTraceResolutionMs / batch, who);
    }
    if (!c.problem.empty() && out.message.empty()) out.message = c.problem;
    out.variants.push_back(c);
  }
  if (out.message.empty()) out.state = Corroboration::agrees;
  return out;
}

json corroboration_json(const CorroborationResult& c) {
  json variants = json::array();
  for (const VariantCheck& v : c.variants) {
    json j = {{"name", v.name}, {"reported_ms", v.reported_ms}, {"traced_ms", v.traced_ms},
              {"low_ms", v.low_ms}, {"high_ms", v.high_ms},
              {"reported_samples", v.reported_samples}, {"dropped_samples", v.dropped_samples},
              {"traced_samples", v.traced_samples}};
    if (v.traced_ms > 0) j["difference"] = v.reported_ms / v.traced_ms - 1;
    if (!v.problem.empty()) j["problem"] = v.problem;
    variants.push_back(j);
  }
  return {{"state", to_string(c.state)}, {"message", c.message}, {"variants", variants}};
}

std::string corroboration_line(const json& runs) {
  if (!runs.is_array() || runs.empty()) return "";
  std::string state = "agrees", why, widest;
  double most = -1;
  std::size_t checked = 0;
  for (const json& run : runs) {
    const std::string s = run.value("state", std::string());
    if (s != "agrees") {
      state = s;
      why = run.value("message", std::string());
    }
    for (const json& v : run.value("variants", json::array())) {
      const double d = std::abs(v.value("difference", 0.0));
      if (v.value("traced_ms", 0.0) > 0 && d > most) {
        most = d;
        widest = v.value("name", std::string());
      }
    }
    checked = std::max(checked, run.value("variants", json::array()).size());
  }
  if (state == "off") return "times not corroborated (--no-corroborate)";
  if (state == "unavailable") return "times not corroborated: " + why;
  if (state == "disagrees") return "times NOT corroborated: " + why;
  char buf[200];
  std::snprintf(buf, sizeof buf, "times corroborated by the checker's tracer: %zu variant%s, at most %.1f%% apart",
                checked, checked == 1 ? "" : "s", 100 * std::max(most, 0.0));
  return std::string(buf) + (widest.empty() ? "" : " (\"" + widest + "\")");
}

}  // namespace lab
