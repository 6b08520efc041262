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

// A tagged kernel: its tag (from the launch) and, once joined, when it ran (from its record).
struct Edge {
  TraceTag tag{};
  bool ran = false;
  unsigned stream = 0;
  unsigned long long start = 0, end = 0;
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

// Pairs every sample's opening and closing kernels into TracedSamples.
void pair_edges(const std::vector<Edge>& edges, Trace& t) {
  std::map<std::pair<int, int>, std::pair<const Edge*, const Edge*>> by_sample;  // open, close
  auto say = [&](const TraceTag& g, const std::string& what) {
    t.conflicts.push_back("sample " + std::to_string(g.sample) + " of measurement " +
                          std::to_string(g.measurement) + " " + what);
  };
  for (const Edge& e : edges) {
    if (!e.ran || e.tag.sample < 0) continue;  // never ran (its record is missing), or warm-up
    if (e.tag.edge < kTraceLeadIn || e.tag.edge > kTraceCloseMark) {
      say(e.tag, "has a kernel that is neither an opening nor a closing one");
      continue;
    }
    auto& slot = by_sample[{e.tag.measurement, e.tag.sample}];
    const Edge*& mine = opens(e.tag.edge) ? slot.first : slot.second;
    if (mine) say(e.tag, opens(e.tag.edge) ? "was opened twice" : "was closed twice");
    else mine = &e;
  }
  for (const auto& entry : by_sample) {
    const auto [open, close] = entry.second;
    if (!open || !close) continue;  // incomplete: counted as missing by whoever needs it
    const TraceTag& a = open->tag;
    const TraceTag& b = close->tag;
    if (a.variant != b.variant || a.batch != b.batch)
      say(a, "was opened and closed with different tags");
    else if ((a.edge == kTraceLeadIn) != (b.edge == kTraceClockProbe))
      say(a, "was opened and closed by kernels of two different kinds");
    else if (open->stream != close->stream)
      say(a, "was opened and closed on two different streams");
    else if (close->start < open->end || a.batch < 1)
      say(a, "was closed before it was opened");
    else
      t.samples.push_back({a.measurement, a.variant, a.sample, a.batch, a.edge == kTraceLeadIn,
                           1e-6 * static_cast<double>(close->start - open->end)});
  }
}

}  // namespace

Trace parse_trace(std::istream& in) {
  Trace t;
  std::string line;
  if (!std::getline(in, line) || line != "lab-trace 1") return t;
  t.loaded = t.set_up = true;
  std::vector<Edge> edges;
  std::unordered_map<unsigned, std::size_t> by_driver, by_runtime;  // correlation id -> edge
  std::vector<std::tuple<unsigned, unsigned, unsigned long long, unsigned long long>> kernels;
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
      t.unusable = "the tracer could not set CUPTI up (" + line.substr(std::min<std::size_t>(2, line.size())) + ")";
      return t;
    } else if (kind == 'T') {
      unsigned driver = 0, runtime = 0;
      Edge e;
      ok = whole(std::sscanf(text, "T %u %u %d %d %d %d %d%n", &driver, &runtime, &e.tag.measurement,
                             &e.tag.variant, &e.tag.sample, &e.tag.batch, &e.tag.edge, &used),
                 7);
      if (ok && by_driver.count(driver)) {
        t.conflicts.push_back("two launches have the correlation id " + std::to_string(driver));
      } else if (ok) {
        by_driver[driver] = edges.size();
        if (runtime != 0) by_runtime[runtime] = edges.size();
        edges.push_back(e);
        ++t.launches;
      }
    } else if (kind == 'K') {
      unsigned correlation = 0, stream = 0;
      unsigned long long start = 0, end = 0;
      ok = whole(std::sscanf(text, "K %u %u %llu %llu%n", &correlation, &stream, &start, &end, &used), 4) &&
           end >= start;
      if (ok) kernels.emplace_back(correlation, stream, start, end);
      t.kernels += ok ? 1 : 0;
    } else if (kind == 'U') {
      unsigned correlation = 0;
      ok = whole(std::sscanf(text, "U %u%n", &correlation, &used), 1);
      t.unreadable += ok ? 1 : 0;
    } else if (kind == 'E') {
      ok = t.ended = whole(std::sscanf(text, "E %zu%n", &t.dropped, &used), 1);
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
  // A kernel record carries the correlation id of the driver call that launched it, or of the
  // runtime call around that one: either joins it to its tag.
  auto launch_of = [&](unsigned correlation) -> Edge* {
    for (const auto* ids : {&by_driver, &by_runtime})
      if (auto it = ids->find(correlation); it != ids->end()) return &edges[it->second];
    return nullptr;
  };
  for (const auto& [correlation, stream, start, end] : kernels) {
    Edge* found = launch_of(correlation);
    if (!found) continue;  // its launch was not seen: nothing to attribute it to
    Edge& e = *found;
    if (e.ran) {
      t.conflicts.push_back("a launch with correlation id " + std::to_string(correlation) +
                            " ran twice");
      continue;
    }
    e.ran = true;
    e.stream = stream;
    e.start = start;
    e.end = end;
  }
  pair_edges(edges, t);
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
                       "driver of a CUDA 13 toolkit, and its CUPTI library readable?)");
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
  // means the tracer did not work here, whatever the program did.
  if (trace.samples.empty())
    return unavailable("the tracer saw no sample of lab::benchmark (" + std::to_string(trace.launches) +
                       " tagged launches, " + std::to_string(trace.kernels) +
                       " kernel records, none joined)");

  const json variants = result.value("variants", json::array());
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const json& v = variants[i];
    if (!v.is_object() || !v.contains("time_ms") || !v["time_ms"].is_object()) continue;
    VariantCheck c;
    c.name = v.value("name", std::string("?"));
    c.reported_ms = v["time_ms"].value("median", 0.0);
    c.reported_samples = static_cast<std::size_t>(std::max(0.0, v["time_ms"].value("n", 0.0)));
    c.dropped_samples = static_cast<std::size_t>(std::max(0.0, v.value("discarded_throttled", 0.0)));
    // The variant's last measurement is the one its result holds.
    int last = -1;
    for (const TracedSample& s : trace.samples)
      if (s.variant == static_cast<int>(i)) last = std::max(last, s.measurement);
    std::vector<double> per_launch;
    bool lead_in = true;
    int batch = 0;
    for (const TracedSample& s : trace.samples) {
      if (s.variant != static_cast<int>(i) || s.measurement != last) continue;
      per_launch.push_back(s.span_ms / s.batch);
      lead_in = lead_in && s.lead_in;
      batch = batch == 0 || batch == s.batch ? s.batch : -1;
    }
    std::sort(per_launch.begin(), per_launch.end());
    const std::size_t traced = per_launch.size(), kept = c.reported_samples;
    c.traced_samples = traced;
    const std::string who = "\"" + c.name + "\"";
    const std::string lost =
        trace.dropped > 0 ? " (CUPTI dropped " + std::to_string(trace.dropped) + " records)" : "";
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
